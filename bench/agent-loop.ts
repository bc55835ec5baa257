import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { z } from 'zod';
import { bookstoreAgent } from '../examples/bookstore/app.ts';
import { createAgent } from '../src/agent/create-agent.ts';
import { exportSession } from '../src/agent/session-transfer.ts';
import { createEncryption } from '../src/crypto/encryption.ts';
import { envKeyProvider } from '../src/crypto/env-key-provider.ts';
import { createDemoModel } from '../src/model/demo-model.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../src/store/store.ts';
import { defineTool } from '../src/tools/define-tool.ts';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const note = 'x'.repeat(160);

/**
 * A zero-latency scripted model: `steps` tool calls of ~200-byte messages, then a reply.
 * It records when each call starts so per-step cost can be split into deciles.
 */
export function scriptedModel(steps: number, stamps: number[]): LanguageModelV4 {
  let n = 0;
  return {
    specificationVersion: 'v4',
    provider: 'bench',
    modelId: 'scripted',
    supportedUrls: {},
    async doGenerate() {
      stamps.push(performance.now());
      n += 1;
      if (n > steps)
        return {
          content: [{ type: 'text', text: 'done' }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        };
      return {
        content: [
          {
            type: 'tool-call',
            toolCallId: `call-${n}`,
            toolName: 'note',
            input: JSON.stringify({ text: `${n} ${note}` }),
          },
        ],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      };
    },
    async doStream() {
      throw new Error('not used by the benchmark');
    },
  };
}

export const noteTool = defineTool({
  name: 'note',
  description: 'Write a note.',
  input: z.object({ text: z.string() }),
  approval: 'never',
  execute: ({ text }) => `noted ${text.length} characters`,
});

export interface LoopRow {
  store: 'memory' | 'sqlite';
  steps: number;
  stepsPerSecond: number;
  firstDecileMsPerStep: number;
  lastDecileMsPerStep: number;
  lastOverFirst: number;
  logicalBytes: number;
  storedBytes: number | null;
  storedOverLogical: number | null;
  /** CPU time (user + system) of this process per step: the steadier figure on a shared machine. */
  cpuUsPerStep: number;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function decileMs(stamps: number[], which: 'first' | 'last'): number {
  const gaps = stamps.slice(1).map((t, i) => t - stamps[i]!);
  const size = Math.max(1, Math.floor(gaps.length / 10));
  const slice = which === 'first' ? gaps.slice(0, size) : gaps.slice(-size);
  return median(slice);
}

export interface LoopTiming {
  steps: number;
  elapsed: number;
  stamps: number[];
  logicalBytes: number;
  cpuUs: number;
}

/** Runs one N-step session on `store`: how long it took, per step, and the bytes it meant to write. */
export async function timeLoop(store: Store, steps: number): Promise<LoopTiming> {
  const stamps: number[] = [];
  const agent = createAgent({
    name: 'bench',
    instructions: 'Benchmark agent.',
    tools: [noteTool],
    model: scriptedModel(steps, stamps),
    store,
    maxSteps: steps + 1,
  });
  const cpu = process.cpuUsage();
  const started = performance.now();
  await agent.chat('bench', 'go');
  const elapsed = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const messages = await store.loadMessages('bench');
  const logicalBytes = messages.reduce((sum, m) => sum + Buffer.byteLength(JSON.stringify(m.message)), 0);
  return { steps, elapsed, stamps, logicalBytes, cpuUs: used.user + used.system };
}

/** One table row from a timed loop and the bytes the store really used (null if unknown). */
export function loopRow<K extends string, B extends number | null>(
  store: K,
  timing: LoopTiming,
  storedBytes: B,
): Omit<LoopRow, 'store' | 'storedBytes' | 'storedOverLogical'> & {
  store: K;
  storedBytes: B;
  storedOverLogical: B extends number ? number : number | null;
} {
  const first = decileMs(timing.stamps, 'first');
  const last = decileMs(timing.stamps, 'last');
  return {
    store,
    steps: timing.steps,
    stepsPerSecond: Math.round(timing.steps / (timing.elapsed / 1000)),
    firstDecileMsPerStep: round(first),
    lastDecileMsPerStep: round(last),
    lastOverFirst: round(last / first),
    cpuUsPerStep: Math.round(timing.cpuUs / timing.steps),
    logicalBytes: timing.logicalBytes,
    storedBytes,
    storedOverLogical: (storedBytes === null
      ? null
      : round(storedBytes / timing.logicalBytes)) as B extends number ? number : number | null,
  };
}

/** A fixed key for `encrypted` runs: the bench measures the cipher, not key handling. */
export const BENCH_ENCRYPTION_KEYS = `bench:${Buffer.alloc(32, 7).toString('base64')}`;

/** The SQLite store of a bench, with encryption at rest (COUNTERSIGN_ENCRYPTION_KEYS) when asked. */
export function benchSqliteStore(
  options: Parameters<typeof createSqliteStore>[0],
  encrypted = false,
): ReturnType<typeof createSqliteStore> {
  if (!encrypted) return createSqliteStore(options);
  const encryption = createEncryption(envKeyProvider(BENCH_ENCRYPTION_KEYS));
  return encryption.wrap(createSqliteStore({ ...options, codec: encryption.codec }));
}

export async function runLoop(
  kind: 'memory' | 'sqlite',
  steps: number,
  dir: string,
  encrypted = false,
): Promise<LoopRow> {
  const path = join(dir, `loop-${kind}-${steps}${encrypted ? '-enc' : ''}.db`);
  const store: Store = kind === 'memory' ? createMemoryStore() : benchSqliteStore({ path }, encrypted);
  const timing = await timeLoop(store, steps);
  let storedBytes: number | null = null;
  if (kind === 'sqlite') {
    await (store as ReturnType<typeof createSqliteStore>).checkpoint();
    storedBytes = statSync(path).size;
  }
  await store.close();
  return loopRow(kind, timing, storedBytes);
}

/** The ceiling: one INSERT per transaction on the same kind of file, same pragmas. */
export function rawSqliteCommits(dir: string, count: number): { commitsPerSecond: number } {
  const db = new DatabaseSync(join(dir, 'raw.db'));
  db.exec(
    'PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE IF NOT EXISTS raw (id INTEGER PRIMARY KEY, body TEXT)',
  );
  const insert = db.prepare('INSERT INTO raw (body) VALUES (?)');
  const body = `{"role":"assistant","text":"${note}"}`;
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    db.exec('BEGIN IMMEDIATE');
    insert.run(body);
    db.exec('COMMIT');
  }
  const elapsed = performance.now() - started;
  db.close();
  return { commitsPerSecond: Math.round(count / (elapsed / 1000)) };
}

/** The seed scenario (one user message, one waiting approval) exported: its size in bytes. */
export async function seedExportBytes(): Promise<number> {
  const store = createMemoryStore();
  const agent = bookstoreAgent.with({ store, model: createDemoModel() });
  await agent.chat('seed', 'Please cancel my order 1044.', { principal: 'c-100' });
  return Buffer.byteLength(JSON.stringify(await exportSession(store, 'seed')));
}

export function benchDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-bench-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

const sizes = [10, 100, 1000];

function medianBy<T>(rows: T[], key: (row: T) => number): T {
  return [...rows].sort((a, b) => key(a) - key(b))[Math.floor(rows.length / 2)]!;
}

export interface LoopBench {
  loop: LoopRow[];
  rawSqlite: { commitsPerSecond: number };
  seedExportBytes: number;
}

/** The agent loop on memory and SQLite at 10, 100 and 1,000 steps, and the raw SQLite ceiling. */
export async function benchLoop(dir: string, repeats: number): Promise<LoopBench> {
  const loop: LoopRow[] = [];
  for (const store of ['memory', 'sqlite'] as const) {
    for (const steps of sizes) {
      const runs: LoopRow[] = [];
      for (let i = 0; i < repeats; i++)
        runs.push(await runLoop(store, steps, join(dir, `${store}-${steps}-${i}`)));
      loop.push(medianBy(runs, (row) => row.stepsPerSecond));
    }
  }
  mkdirSync(join(dir, 'raw'), { recursive: true });
  const rawSqlite = medianBy(
    Array.from({ length: repeats }, () => rawSqliteCommits(join(dir, 'raw'), 2000)),
    (row) => row.commitsPerSecond,
  );
  return { loop, rawSqlite, seedExportBytes: await seedExportBytes() };
}

export function printLoopTable(bench: LoopBench, repeats: number): void {
  const raw = bench.rawSqlite.commitsPerSecond;
  console.log(`\nAgent loop, one durable commit per step (median of ${repeats} runs)\n`);
  console.table(
    bench.loop.map((row) => ({
      store: row.store,
      N: row.steps,
      'steps/s': row.stepsPerSecond,
      'of raw commits/s': row.store === 'sqlite' ? `${Math.round((row.stepsPerSecond / raw) * 100)}%` : '-',
      'CPU µs/step': row.cpuUsPerStep,
      'first-decile ms/step': row.firstDecileMsPerStep,
      'last-decile ms/step': row.lastDecileMsPerStep,
      'last/first': row.lastOverFirst,
      'logical bytes': row.logicalBytes,
      'stored bytes': row.storedBytes ?? '-',
      'stored/logical': row.storedOverLogical ?? '-',
    })),
  );
  console.log(`Raw SQLite commits (WAL, synchronous=FULL, one INSERT per transaction): ${raw}/s`);
  console.log(`Seed-scenario session export: ${bench.seedExportBytes} bytes`);
}

/** `node bench/agent-loop.ts`: this bench alone (BENCH_REPEATS, default 3). */
if (import.meta.main) {
  const { dir, cleanup } = benchDir();
  try {
    const repeats = Number(process.env.BENCH_REPEATS ?? 3);
    printLoopTable(await benchLoop(dir, repeats), repeats);
  } finally {
    cleanup();
  }
}
