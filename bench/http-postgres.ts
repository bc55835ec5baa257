import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from '../src/server/create-server.ts';
import { startServer } from '../src/server/start-server.ts';
import { createPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { benchDir } from './agent-loop.ts';
import { decisionAgent } from './decision-agent.ts';
import { countedStore, installPgCounter, type PgCounts, pgCounts, resetPgCounts } from './pg-round-trips.ts';
import { admin, BENCH_PG_URL, rawPostgresCommits } from './postgres.ts';
import { postgresCpuMicros } from './postgres-cpu.ts';

const TOKEN = 'bench-token-0123456789abcdef';

export interface HttpPostgresRow {
  clients: number;
  decisions: number;
  decisionsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  won: number;
  otherErrors: number;
  /** Statements sent to PostgreSQL per decision (BEGIN and COMMIT included), warm-up included. */
  statementsPerDecision: number;
  /** Waits for PostgreSQL per decision: statements pipelined behind another share one. */
  roundTripsPerDecision: number;
  /** Writes to PostgreSQL's sockets per decision, each one system call. */
  socketWritesPerDecision: number;
  /** Server transactions per decision: BEGIN…COMMIT blocks plus autocommit statements. */
  transactionsPerDecision: number;
  serverCpuUsPerDecision: number;
  /** CPU of the PostgreSQL processes per decision, when they run on this machine. */
  postgresCpuUsPerDecision: number | undefined;
  toolRuns: number;
  doubleExecutions: number;
  byMethod: PgCounts['byMethod'];
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 100) / 100;
}

export function clientProcess(
  args: string[],
): Promise<{ latencies: number[]; statuses: Record<string, number>; elapsedMs: number }> {
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

/** Real tool runs per request, from the tool's own state keys (a double execution is two keys). */
export async function pgExecutions(
  schema: string,
  ids: string[],
): Promise<{ runs: number; doubles: number }> {
  const keys = await admin(async (client) => {
    const { rows } = await client.query(
      `SELECT key FROM "${schema}".state WHERE namespace = 'bench' AND key LIKE 'ran:%'`,
    );
    return rows.map((row) => String((row as { key: string }).key));
  });
  const perRequest = new Map<string, number>();
  for (const key of keys) {
    const id = key.split(':')[1]!;
    perRequest.set(id, (perRequest.get(id) ?? 0) + 1);
  }
  let runs = 0;
  let doubles = 0;
  for (const id of ids) {
    const times = perRequest.get(id) ?? 0;
    runs += times;
    if (times > 1) doubles += 1;
  }
  return { runs, doubles };
}

/** Seeds `count` waiting requests in a fresh schema; returns their ids. */
export async function seedRequests(schema: string, count: number): Promise<string[]> {
  const store = await createPostgresStore({ connectionString: BENCH_PG_URL, schema });
  try {
    const agent = decisionAgent(store);
    const ids: string[] = [];
    const sessions = Array.from({ length: count }, (_, i) => `h-${i}`);
    // Eight at a time: seeding is not measured, only waited for.
    for (let i = 0; i < sessions.length; i += 8) {
      const turns = await Promise.all(
        sessions.slice(i, i + 8).map((session) => agent.chat(session, 'Refund order 1044, please.')),
      );
      for (const turn of turns) ids.push(turn.approvals[0]!.id);
    }
    return ids;
  } finally {
    await store.close();
  }
}

/**
 * Approve + execute + continue over HTTP on PostgreSQL: one `countersign` server in this
 * process on a fresh schema, `clients` keep-alive clients in another process. Every
 * statement the server sends is counted (bench/pg-round-trips.ts).
 */
export async function decisionsOverHttpPostgres(
  dir: string,
  count: number,
  clients: number,
  warmup = 200,
  serverUrl = BENCH_PG_URL,
): Promise<HttpPostgresRow> {
  installPgCounter();
  mkdirSync(dir, { recursive: true });
  const schema = `cs_bench_httppg_${randomBytes(4).toString('hex')}`;
  try {
    const ids = await seedRequests(schema, warmup + count);
    const inner = await createPostgresStore({ connectionString: serverUrl, schema, pool: { max: 16 } });
    const store = countedStore(inner);
    const server = createServer({
      agents: [decisionAgent(store)],
      store,
      approvers: [{ name: 'bench', roles: [], token: TOKEN }],
      log: () => undefined,
    });
    const running = await startServer(server, { host: '127.0.0.1', port: 0 });
    const file = join(dir, `queue-${schema}.json`);
    writeFileSync(file, JSON.stringify(ids));
    resetPgCounts();
    const cpuBefore = process.cpuUsage();
    const pgCpuBefore = postgresCpuMicros(serverUrl);
    const out = await clientProcess([running.url, TOKEN, file, String(clients), String(warmup)]);
    const cpu = process.cpuUsage(cpuBefore);
    const pgCpuAfter = postgresCpuMicros(serverUrl);
    const counts = pgCounts();
    await running.close();
    await inner.close();
    const decided = warmup + count;
    const won = out.statuses['200'] ?? 0;
    const latencies = [...out.latencies].sort((a, b) => a - b);
    const { runs } = await pgExecutions(schema, ids.slice(warmup));
    const { doubles } = await pgExecutions(schema, ids);
    const per = (n: number) => Math.round((n / decided) * 100) / 100;
    const byMethod = Object.fromEntries(
      Object.entries(counts.byMethod).map(([name, c]) => [
        name,
        {
          calls: per(c.calls),
          statements: per(c.statements),
          roundTrips: per(c.roundTrips),
          transactions: per(c.transactions),
        },
      ]),
    );
    return {
      clients,
      decisions: count,
      decisionsPerSecond: Math.round(won / (out.elapsedMs / 1000)),
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      won,
      otherErrors: count - won,
      statementsPerDecision: per(counts.statements),
      roundTripsPerDecision: per(counts.roundTrips),
      socketWritesPerDecision: per(counts.socketWrites),
      transactionsPerDecision: per(counts.transactions),
      serverCpuUsPerDecision: Math.round((cpu.user + cpu.system) / decided),
      postgresCpuUsPerDecision:
        pgCpuBefore === undefined || pgCpuAfter === undefined
          ? undefined
          : Math.round((pgCpuAfter - pgCpuBefore) / decided),
      toolRuns: runs,
      doubleExecutions: doubles,
      byMethod,
    };
  } finally {
    await admin((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
  }
}

export interface HttpPostgresBench {
  rawCommitsPerSecond: number[];
  rows: HttpPostgresRow[];
}

export async function benchHttpPostgres(
  dir: string,
  repeats: number,
  count: number,
  clients = 16,
  serverUrl = BENCH_PG_URL,
): Promise<HttpPostgresBench> {
  const rows: HttpPostgresRow[] = [];
  const rawCommitsPerSecond: number[] = [];
  for (let i = 0; i < repeats; i++) {
    rawCommitsPerSecond.push((await rawPostgresCommits(1000, serverUrl)).commitsPerSecond);
    rows.push(await decisionsOverHttpPostgres(join(dir, `httppg-${i}`), count, clients, 200, serverUrl));
  }
  rows.sort((a, b) => a.decisionsPerSecond - b.decisionsPerSecond);
  return { rawCommitsPerSecond, rows: [rows[Math.floor(rows.length / 2)]!] };
}

export function printHttpPostgresTable(bench: HttpPostgresBench, repeats: number): void {
  const raw = [...bench.rawCommitsPerSecond].sort((a, b) => a - b)[
    Math.floor(bench.rawCommitsPerSecond.length / 2)
  ]!;
  console.log(
    `\nDecisions over HTTP on PostgreSQL: approve + execute + continue, zero-latency model, one server, ${bench.rows[0]?.clients ?? 16} clients (median of ${repeats} runs)\n`,
  );
  console.table(
    bench.rows.map((row) => ({
      decisions: row.decisions,
      'decisions/s': row.decisionsPerSecond,
      'of raw commits/s': `${Math.round((row.decisionsPerSecond / raw) * 100)}%`,
      'p50 ms': row.p50Ms,
      'p99 ms': row.p99Ms,
      errors: row.otherErrors,
      'transactions/decision': row.transactionsPerDecision,
      'statements/decision': row.statementsPerDecision,
      'round trips/decision': row.roundTripsPerDecision,
      'socket writes/decision': row.socketWritesPerDecision,
      'server CPU µs/decision': row.serverCpuUsPerDecision,
      'PostgreSQL CPU µs/decision': row.postgresCpuUsPerDecision ?? '-',
      'tool runs': row.toolRuns,
      'double executions': row.doubleExecutions,
    })),
  );
  console.log(
    `Raw PostgreSQL commits/s (one connection, autocommit INSERT) measured between runs: ${bench.rawCommitsPerSecond.join(', ')}`,
  );
  const median = bench.rows[0];
  if (median !== undefined) {
    console.log('Per Store method, per decision (median run):');
    console.table(median.byMethod);
  }
}

if (import.meta.main) {
  const { dir, cleanup } = benchDir();
  try {
    const repeats = Number(process.env.BENCH_REPEATS ?? 1);
    const count = Number(process.argv[2] ?? process.env.BENCH_HTTP_DECISIONS ?? 1000);
    printHttpPostgresTable(await benchHttpPostgres(dir, repeats, count), repeats);
  } finally {
    cleanup();
  }
}
