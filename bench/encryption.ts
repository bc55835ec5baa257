import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEncryption } from '../src/crypto/encryption.ts';
import { envKeyProvider } from '../src/crypto/env-key-provider.ts';
import { jsonCodec, type PayloadCodec } from '../src/store/codec.ts';
import { createMemoryDataKeys } from '../src/store/memory/memory-data-keys.ts';
import { BENCH_ENCRYPTION_KEYS, benchDir, round, runLoop } from './agent-loop.ts';
import { DEFAULT_WARMUP, decisionsOverHttp } from './http.ts';

/**
 * Encryption at rest on beside off, in the same run, interleaved (this machine's fsync
 * latency drifts minute to minute): agent-loop steps/s on SQLite, HTTP decisions/s on
 * SQLite, the CPU µs each costs this process, and the codec alone (encode + decode of one
 * ~200-byte message). The goal is at most 15% slower.
 */
interface Side {
  stepsPerSecond: number;
  cpuUsPerStep: number;
  decisionsPerSecond: number;
  serverCpuUsPerDecision: number;
  p50Ms: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function loopSide(dir: string, steps: number, encrypted: boolean) {
  const cpu = process.cpuUsage();
  const row = await runLoop('sqlite', steps, dir, encrypted);
  const used = process.cpuUsage(cpu);
  return { stepsPerSecond: row.stepsPerSecond, cpuUsPerStep: Math.round((used.user + used.system) / steps) };
}

/** CPU µs per encode, then per decode of texts this process has not seen (no cache hit). */
function codecMicros(codec: PayloadCodec, rounds: number, forget: () => void) {
  const message = {
    role: 'assistant',
    text: 'x'.repeat(160),
    calls: [{ id: 'call-1', name: 'note', args: { n: 1 } }],
  };
  const texts: string[] = [];
  let started = process.cpuUsage();
  for (let i = 0; i < rounds; i++) texts.push(codec.encode({ ...message, n: i }, 'store'));
  let used = process.cpuUsage(started);
  const encodeUs = round((used.user + used.system) / rounds);
  forget();
  started = process.cpuUsage();
  for (const text of texts) codec.decode(text, 'bench');
  used = process.cpuUsage(started);
  return { encodeUs, decodeUs: round((used.user + used.system) / rounds) };
}

async function codecPair(rounds: number) {
  const encryption = createEncryption(envKeyProvider(BENCH_ENCRYPTION_KEYS));
  encryption.keyring.attach(createMemoryDataKeys(), async (scope) => scope);
  await encryption.keyring.ready({ scope: 'store' });
  const forget = () => encryption.keyring.openedTexts.clear();
  codecMicros(jsonCodec, rounds, forget);
  codecMicros(encryption.codec, rounds, forget);
  return {
    json: codecMicros(jsonCodec, rounds, forget),
    encrypted: codecMicros(encryption.codec, rounds, forget),
  };
}

export async function benchEncryption(options: { repeats: number; steps: number; decisions: number }) {
  const { dir, cleanup } = benchDir();
  try {
    const runs: Record<'off' | 'on', Side[]> = { off: [], on: [] };
    for (let i = 0; i < options.repeats; i++) {
      for (const side of ['off', 'on'] as const) {
        const encrypted = side === 'on';
        const sideDir = join(dir, `${side}-${i}`);
        mkdirSync(sideDir, { recursive: true });
        const loop = await loopSide(sideDir, options.steps, encrypted);
        const http = await decisionsOverHttp(
          join(sideDir, 'http'),
          options.decisions,
          16,
          'unique',
          DEFAULT_WARMUP,
          2000,
          encrypted,
        );
        runs[side].push({
          ...loop,
          decisionsPerSecond: http.decisionsPerSecond,
          serverCpuUsPerDecision: http.serverCpuUsPerDecision,
          p50Ms: http.p50Ms,
        });
      }
    }
    const pick = (side: 'off' | 'on') => ({
      stepsPerSecond: median(runs[side].map((r) => r.stepsPerSecond)),
      cpuUsPerStep: median(runs[side].map((r) => r.cpuUsPerStep)),
      decisionsPerSecond: median(runs[side].map((r) => r.decisionsPerSecond)),
      serverCpuUsPerDecision: median(runs[side].map((r) => r.serverCpuUsPerDecision)),
      p50Ms: median(runs[side].map((r) => r.p50Ms)),
    });
    const off = pick('off');
    const on = pick('on');
    const codec = await codecPair(20_000);
    return {
      off,
      on,
      onOverOff: {
        stepsPerSecond: round(on.stepsPerSecond / off.stepsPerSecond),
        cpuUsPerStep: round(on.cpuUsPerStep / off.cpuUsPerStep),
        decisionsPerSecond: round(on.decisionsPerSecond / off.decisionsPerSecond),
        serverCpuUsPerDecision: round(on.serverCpuUsPerDecision / off.serverCpuUsPerDecision),
      },
      codec,
      runs,
    };
  } finally {
    cleanup();
  }
}

/** `node bench/encryption.ts`: BENCH_REPEATS (3), BENCH_STEPS (500), BENCH_HTTP_DECISIONS (500). */
if (import.meta.main) {
  const repeats = Number(process.env.BENCH_REPEATS ?? 3);
  const steps = Number(process.env.BENCH_STEPS ?? 500);
  const decisions = Number(process.env.BENCH_HTTP_DECISIONS ?? 500);
  const result = await benchEncryption({ repeats, steps, decisions });
  console.log(
    `\nEncryption at rest off and on, SQLite, interleaved, median of ${repeats} runs (${steps}-step agent loop; ${decisions} HTTP decisions, 16 clients)\n`,
  );
  console.table(
    (['off', 'on'] as const).map((side) => ({
      encryption: side,
      'agent steps/s': result[side].stepsPerSecond,
      'CPU µs/step': result[side].cpuUsPerStep,
      'HTTP decisions/s': result[side].decisionsPerSecond,
      'server CPU µs/decision': result[side].serverCpuUsPerDecision,
      'p50 ms': result[side].p50Ms,
    })),
  );
  console.log('on / off:', result.onOverOff);
  console.log(
    `codec alone, CPU µs per ~200-byte message: encode JSON ${result.codec.json.encodeUs}, AES-256-GCM ${result.codec.encrypted.encodeUs}; decode (not cached) JSON ${result.codec.json.decodeUs}, AES-256-GCM ${result.codec.encrypted.decodeUs}`,
  );
  const outDir = join(import.meta.dirname, 'results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(
    join(outDir, 'encryption-latest.json'),
    `${JSON.stringify({ name: 'encryption', at: new Date().toISOString(), node: process.version, repeats, steps, decisions, ...result }, null, 2)}\n`,
  );
}
