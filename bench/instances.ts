import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { benchDir } from './agent-loop.ts';
import { clientProcess, pgExecutions, seedRequests } from './http-postgres.ts';
import type { PgCounts } from './pg-round-trips.ts';
import { admin, BENCH_PG_URL, rawPostgresCommits } from './postgres.ts';
import { postgresCpuMicros } from './postgres-cpu.ts';

const TOKEN = 'bench-token-0123456789abcdef';

export interface InstanceRow {
  instances: number;
  clients: number;
  decisions: number;
  decisionsPerSecond: number;
  /** decisions/s over the one-instance row of the same repeat. */
  overOne: number;
  p99Ms: number;
  errors: number;
  /** CPU of all the server processes together, per decision (warm-up included). */
  serverCpuUsPerDecision: number;
  /** CPU of the PostgreSQL processes over the same window, per decision; undefined if not local. */
  postgresCpuUsPerDecision: number | undefined;
  transactionsPerDecision: number;
  statementsPerDecision: number;
  roundTripsPerDecision: number;
  socketWritesPerDecision: number;
  doubleExecutions: number;
}

interface Instance {
  child: ChildProcess;
  lines: Interface;
  url: string;
  next(): Promise<string>;
}

async function startInstance(schema: string): Promise<Instance> {
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, 'serve-instance.ts'), BENCH_PG_URL, schema, TOKEN],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout! });
  const iterator = lines[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await iterator.next();
    if (done) throw new Error('serve-instance.ts exited');
    return value as string;
  };
  const { url } = JSON.parse(await next()) as { url: string };
  return { child, lines, url, next };
}

/**
 * `instances` servers on one schema, 16 clients spread over them in turn. Each instance is
 * warmed up with `warmupEach` unmeasured decisions, as the single one is: its own process
 * compiles the same hot code, and sharing one warm-up among several left each of them colder
 * in the measured window.
 */
export async function decisionsOnInstances(
  dir: string,
  instances: number,
  count: number,
  clients = 16,
  warmupEach = 200,
): Promise<Omit<InstanceRow, 'overOne'>> {
  const warmup = warmupEach * instances;
  const schema = `cs_bench_inst${instances}_${randomBytes(4).toString('hex')}`;
  const servers: Instance[] = [];
  try {
    const ids = await seedRequests(schema, warmup + count);
    for (let i = 0; i < instances; i++) servers.push(await startInstance(schema));
    for (const server of servers) server.child.stdin!.write('reset\n');
    for (const server of servers) await server.next();
    const file = join(dir, `queue-${schema}.json`);
    writeFileSync(file, JSON.stringify(ids));
    const pgCpuBefore = postgresCpuMicros(BENCH_PG_URL);
    const out = await clientProcess([
      servers.map((server) => server.url).join(','),
      TOKEN,
      file,
      String(clients),
      String(warmup),
    ]);
    const pgCpuAfter = postgresCpuMicros(BENCH_PG_URL);
    let cpuUs = 0;
    let transactions = 0;
    let statements = 0;
    let roundTrips = 0;
    let socketWrites = 0;
    for (const server of servers) server.child.stdin!.write('stop\n');
    for (const server of servers) {
      const done = JSON.parse(await server.next()) as Pick<
        PgCounts,
        'statements' | 'roundTrips' | 'transactions' | 'socketWrites' | 'byMethod'
      > & { cpuUs: number };
      if (process.env.BENCH_VERBOSE) console.error(instances, JSON.stringify(done.byMethod));
      cpuUs += done.cpuUs;
      transactions += done.transactions;
      statements += done.statements;
      roundTrips += done.roundTrips;
      socketWrites += done.socketWrites;
    }
    const decided = warmup + count;
    const won = out.statuses['200'] ?? 0;
    const latencies = [...out.latencies].sort((a, b) => a - b);
    const { doubles } = await pgExecutions(schema, ids);
    return {
      instances,
      clients,
      decisions: count,
      decisionsPerSecond: Math.round(won / (out.elapsedMs / 1000)),
      p99Ms: Math.round((latencies[Math.floor(0.99 * latencies.length)] ?? 0) * 10) / 10,
      errors: count - won,
      serverCpuUsPerDecision: Math.round(cpuUs / decided),
      postgresCpuUsPerDecision:
        pgCpuBefore === undefined || pgCpuAfter === undefined
          ? undefined
          : Math.round((pgCpuAfter - pgCpuBefore) / decided),
      transactionsPerDecision: Math.round((transactions / decided) * 100) / 100,
      statementsPerDecision: Math.round((statements / decided) * 100) / 100,
      roundTripsPerDecision: Math.round((roundTrips / decided) * 100) / 100,
      socketWritesPerDecision: Math.round((socketWrites / decided) * 100) / 100,
      doubleExecutions: doubles,
    };
  } finally {
    // Each was told to stop; give it a moment to exit by itself (a CPU profile is written at exit).
    await Promise.all(servers.map((server) => exited(server.child, 2000)));
    for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGTERM');
    await admin((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
  }
}

function exited(child: ChildProcess, ms: number): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export interface InstanceBench {
  rawCommitsPerSecond: number[];
  rows: InstanceRow[];
}

/** 1, 2 and 4 instances, interleaved `repeats` times; the median repeat of each is kept. */
export async function benchInstances(
  repeats: number,
  count: number,
  counts: readonly number[] = [1, 2, 4],
): Promise<InstanceBench> {
  const { dir, cleanup } = benchDir();
  try {
    const runs = new Map<number, InstanceRow[]>(counts.map((n) => [n, []]));
    const rawCommitsPerSecond: number[] = [];
    for (let i = 0; i < repeats; i++) {
      rawCommitsPerSecond.push((await rawPostgresCommits(1000)).commitsPerSecond);
      let one = 0;
      for (const n of counts) {
        const row = await decisionsOnInstances(dir, n, count);
        if (n === counts[0]) one = row.decisionsPerSecond;
        runs.get(n)!.push({ ...row, overOne: Math.round((row.decisionsPerSecond / one) * 100) / 100 });
      }
    }
    const rows = counts.map((n) => {
      const sorted = [...runs.get(n)!].sort((a, b) => a.overOne - b.overOne);
      return sorted[Math.floor(sorted.length / 2)]!;
    });
    return { rawCommitsPerSecond, rows };
  } finally {
    cleanup();
  }
}

export function printInstanceTable(bench: InstanceBench, repeats: number): void {
  console.log(
    `\n\`serve\` instances on one PostgreSQL database: HTTP decisions (approve + execute + continue), ${bench.rows[0]?.clients ?? 16} clients spread over the instances, zero-latency model (median of ${repeats} interleaved runs)\n`,
  );
  console.table(
    bench.rows.map((row) => ({
      instances: row.instances,
      'decisions/s': row.decisionsPerSecond,
      '× one instance': row.overOne,
      'p99 ms': row.p99Ms,
      errors: row.errors,
      'server CPU µs/decision': row.serverCpuUsPerDecision,
      'PostgreSQL CPU µs/decision': row.postgresCpuUsPerDecision ?? '-',
      'transactions/decision': row.transactionsPerDecision,
      'statements/decision': row.statementsPerDecision,
      'round trips/decision': row.roundTripsPerDecision,
      'socket writes/decision': row.socketWritesPerDecision,
      'double executions': row.doubleExecutions,
    })),
  );
  console.log(
    `Raw PostgreSQL commits/s (one connection) measured between runs: ${bench.rawCommitsPerSecond.join(', ')}`,
  );
}

if (import.meta.main) {
  const repeats = Number(process.env.BENCH_REPEATS ?? 1);
  const count = Number(process.argv[2] ?? process.env.BENCH_HTTP_DECISIONS ?? 1000);
  // BENCH_INSTANCES=1,2 runs only those counts (the first is the baseline of the ratio).
  const counts = process.env.BENCH_INSTANCES?.split(',').map(Number);
  printInstanceTable(await benchInstances(repeats, count, counts), repeats);
}
