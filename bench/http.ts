import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Agent } from '../src/agent/create-agent.ts';
import { createServer } from '../src/server/create-server.ts';
import { startServer } from '../src/server/start-server.ts';
import type { Store } from '../src/store/store.ts';
import { benchDir, benchSqliteStore, rawSqliteCommits } from './agent-loop.ts';
import { countExecutions, decisionAgent } from './decision-agent.ts';
import { drain } from './drain.ts';

export interface HttpRow {
  clients: number;
  /**
   * unique: each request decided by one client; contended: by two racing clients (one gets
   * 409); library: the same decisions through `agent.approve` in this process, no HTTP —
   * the difference to `unique` is what HTTP costs.
   */
  mode: 'unique' | 'contended' | 'library' | 'watched';
  /** Live event streams (inboxes left open) connected during the run; `watched` mode only. */
  watchers: number;
  /** The fewest `approval.decided` events one stream saw, of `decisions + warmup` sent. */
  fewestEventsSeen: number | null;
  /** Measured decisions, after `warmup` more that were decided first and not timed. */
  decisions: number;
  warmup: number;
  attempts: number;
  decisionsPerSecond: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  won: number;
  alreadyDecided: number;
  otherErrors: number;
  /** Store writes per decision, counted at the Store port (warm-up included). */
  writesPerDecision: number;
  /** Durable SQLite transactions (one fsync each) per decision: writes share them (group commit). */
  transactionsPerDecision: number;
  /** CPU time (user + system) of the server's process per decision, warm-up included. */
  serverCpuUsPerDecision: number;
  toolRuns: number;
  doubleExecutions: number;
}

const TOKEN = 'bench-token-0123456789abcdef';
const writeMethods = new Set([
  'decide',
  'acquireLease',
  'releaseLease',
  'startExecution',
  'finishExecution',
  'commitStep',
  'setState',
  'appendAudit',
  'ensureSession',
  'revokeRule',
]);

/** Counts write calls at the Store port; each is one SQLite transaction (one fsync). */
function countingStore(store: Store): { store: Store; writes: () => number } {
  let writes = 0;
  const proxy = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof key === 'string' && writeMethods.has(key) && typeof value === 'function') {
        return (...args: unknown[]) => {
          writes += 1;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: proxy, writes: () => writes };
}

/** Decided first and not measured: connections open and the server's code gets compiled. */
export const DEFAULT_WARMUP = 200;

/** Inboxes left open during the `watched` runs. */
export const WATCHERS = 20;

function clientProcess(args: string[]): Promise<{
  latencies: number[];
  statuses: Record<string, number>;
  elapsedMs: number;
}> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(import.meta.dirname, 'http-client.ts'), ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`http client exited ${code}`)),
    );
  });
}

/** Starts the watcher process and waits until all its streams are open. */
function openWatchers(url: string, count: number): Promise<{ close(): Promise<number[]> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(import.meta.dirname, 'http-watchers.ts'), url, TOKEN, String(count)],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.on('error', reject);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out === 'ready\n')
        resolve({
          close: () =>
            new Promise((done) => {
              child.on('close', () => done(JSON.parse(out.slice('ready\n'.length)) as number[]));
              child.stdin.write('stop\n');
            }),
        });
    });
  });
}

async function approveDirectly(agent: Agent, id: string): Promise<number> {
  try {
    await agent.approve(id, { by: 'bench' });
    return 200;
  } catch (error) {
    return (error as { code?: string }).code === 'ALREADY_DECIDED' ? 409 : 500;
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 100) / 100;
}

/**
 * Approve + execute + continue over HTTP: `clients` concurrent keep-alive clients on
 * loopback post decisions to one `countersign` server on one SQLite file, with a
 * zero-latency model. Real tool runs are counted from the tool's own side effects.
 */
export async function decisionsOverHttp(
  dir: string,
  count: number,
  clients: number,
  mode: HttpRow['mode'],
  warmup = DEFAULT_WARMUP,
  watchIntervalMs = 2000,
  /** Encryption at rest on (bench/encryption.ts runs both). */
  encrypted = false,
): Promise<HttpRow> {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `http-${mode}.db`);
  let transactions = 0;
  const raw = benchSqliteStore(
    {
      path,
      busyTimeoutMs: 30_000,
      onCommit: () => {
        transactions += 1;
      },
    },
    encrypted,
  );
  const ids: string[] = [];
  const preparer = decisionAgent(raw);
  for (let i = 0; i < warmup + count; i++)
    ids.push((await preparer.chat(`h-${i}`, 'Refund order 1044, please.')).approvals[0]!.id);

  const { store, writes } = countingStore(raw);
  const direct = decisionAgent(store);
  const server = createServer({
    agents: [direct],
    store,
    approvers: [{ name: 'bench', roles: [], token: TOKEN }],
    watchIntervalMs,
    log: () => undefined,
  });
  const running = await startServer(server, { host: '127.0.0.1', port: 0 });
  // Contended: every request twice in a row, so two clients race for it.
  const queue = mode === 'contended' ? ids.flatMap((id) => [id, id]) : [...ids];
  const latencies: number[] = [];
  let won = 0;
  let alreadyDecided = 0;
  let otherErrors = 0;
  const tally = (status: number) => {
    if (status === 200) won += 1;
    else if (status === 409) alreadyDecided += 1;
    else otherErrors += 1;
  };
  let watcherEvents: number[] = [];
  const writesBefore = writes();
  const transactionsBefore = transactions;
  const cpuBefore = process.cpuUsage();
  let elapsedMs = 0;
  if (mode === 'library') {
    for (const id of queue.splice(0, warmup)) await approveDirectly(direct, id);
    const started = performance.now();
    await drain(queue, clients, async (id) => {
      const t0 = performance.now();
      tally(await approveDirectly(direct, id));
      latencies.push(performance.now() - t0);
    });
    elapsedMs = performance.now() - started;
  } else {
    const file = join(dir, `queue-${mode}.json`);
    writeFileSync(file, JSON.stringify(queue));
    const warmupAttempts = mode === 'contended' ? 2 * warmup : warmup;
    const watchers = mode === 'watched' ? await openWatchers(running.url, WATCHERS) : null;
    const out = await clientProcess([running.url, TOKEN, file, String(clients), String(warmupAttempts)]);
    // Let the last events reach the streams before they are closed.
    await new Promise((resolve) => setTimeout(resolve, 300));
    watcherEvents = watchers ? await watchers.close() : [];
    queue.splice(0, warmupAttempts);
    latencies.push(...out.latencies);
    // Measured by the clients, so their process's start-up is not counted.
    elapsedMs = out.elapsedMs;
    for (const [status, times] of Object.entries(out.statuses))
      for (let i = 0; i < times; i++) tally(Number(status));
  }
  const elapsed = elapsedMs / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const written = writes() - writesBefore;
  const committed = transactions - transactionsBefore;
  const decided = warmup + count;
  await running.close();
  // Tool runs of the measured requests; double executions over every request, warm-up included.
  const { runs } = await countExecutions(raw, ids.slice(warmup));
  const { doubles } = await countExecutions(raw, ids);
  await raw.close();
  latencies.sort((a, b) => a - b);
  return {
    clients,
    mode,
    watchers: watcherEvents.length,
    fewestEventsSeen: watcherEvents.length ? Math.min(...watcherEvents) : null,
    decisions: count,
    warmup,
    attempts: queue.length,
    decisionsPerSecond: Math.round(won / elapsed),
    requestsPerSecond: Math.round(queue.length / elapsed),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    won,
    alreadyDecided,
    otherErrors,
    writesPerDecision: Math.round((written / decided) * 10) / 10,
    transactionsPerDecision: Math.round((committed / decided) * 100) / 100,
    serverCpuUsPerDecision: Math.round((cpu.user + cpu.system) / decided),
    toolRuns: runs,
    doubleExecutions: doubles,
  };
}

export interface HttpBench {
  /** Raw SQLite commits per second on this disk, measured between the runs (fsync-bound). */
  rawCommitsPerSecond: number[];
  rows: HttpRow[];
}

/**
 * The modes run interleaved, `repeats` times, and the median run of each is reported: this
 * machine's fsync latency swings several-fold from one minute to the next.
 */
export async function benchHttp(
  dir: string,
  repeats: number,
  count: number,
  clients = 16,
): Promise<HttpBench> {
  const modes = ['unique', 'contended', 'watched', 'library'] as const;
  const runs = new Map<string, HttpRow[]>(modes.map((mode) => [mode, []]));
  const rawCommitsPerSecond: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const rawDir = join(dir, `raw-${i}`);
    mkdirSync(rawDir, { recursive: true });
    rawCommitsPerSecond.push(rawSqliteCommits(rawDir, 1000).commitsPerSecond);
    for (const mode of modes)
      runs.get(mode)!.push(await decisionsOverHttp(join(dir, `${mode}-${i}`), count, clients, mode));
  }
  const rows = modes.map((mode) => {
    const sorted = [...runs.get(mode)!].sort((a, b) => a.decisionsPerSecond - b.decisionsPerSecond);
    return sorted[Math.floor(sorted.length / 2)]!;
  });
  return { rawCommitsPerSecond, rows };
}

export function printHttpTable(bench: HttpBench, repeats: number): void {
  console.log(
    `\nDecisions over HTTP on SQLite: approve + execute + continue, zero-latency model, ${bench.rows[0]?.clients ?? 16} concurrent clients on loopback, after ${bench.rows[0]?.warmup ?? DEFAULT_WARMUP} unmeasured warm-up decisions (median of ${repeats} runs)\n`,
  );
  console.table(
    bench.rows.map((row) => ({
      mode: row.mode === 'watched' ? `unique, ${row.watchers} inboxes open` : row.mode,
      decisions: row.decisions,
      'decisions/s': row.decisionsPerSecond,
      'requests/s': row.requestsPerSecond,
      'p50 ms': row.p50Ms,
      'p99 ms': row.p99Ms,
      '409s': row.alreadyDecided,
      errors: row.otherErrors,
      'writes/decision': row.writesPerDecision,
      'fsyncs/decision': row.transactionsPerDecision,
      'server CPU µs/decision': row.serverCpuUsPerDecision,
      'tool runs': row.toolRuns,
      'double executions': row.doubleExecutions,
      'events per inbox':
        row.fewestEventsSeen === null ? '-' : `${row.fewestEventsSeen}/${row.decisions + row.warmup}`,
    })),
  );
  console.log(`Raw SQLite commits/s measured between runs: ${bench.rawCommitsPerSecond.join(', ')}`);
}

/** `node bench/http.ts [count]`: this bench alone. */
if (import.meta.main) {
  const { dir, cleanup } = benchDir();
  try {
    const repeats = Number(process.env.BENCH_REPEATS ?? 3);
    const count = Number(process.argv[2] ?? process.env.BENCH_HTTP_DECISIONS ?? 2000);
    const bench = await benchHttp(dir, repeats, count);
    printHttpTable(bench, repeats);
    const outDir = join(import.meta.dirname, 'results');
    mkdirSync(outDir, { recursive: true });
    const results = { name: 'http', at: new Date().toISOString(), node: process.version, repeats, ...bench };
    writeFileSync(join(outDir, 'http-latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  } finally {
    cleanup();
  }
}
