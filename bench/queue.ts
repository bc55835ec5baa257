import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { PgBoss } from 'pg-boss';
import type { ContinuationJob, ContinuationQueue } from '../src/queue/continuation-queue.ts';
import { CONTINUATION_QUEUE, createPgBossQueue } from '../src/queue/pg-boss/pg-boss-queue.ts';
import { createPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { decisionAgent } from './decision-agent.ts';
import { admin, BENCH_PG_URL, postgresProblem, rawPostgresCommits } from './postgres.ts';

export interface QueueRow {
  workers: number;
  decisions: number;
  /** From the first worker ready (every job already queued) until every session has its final reply. */
  decisionsPerSecond: number;
  /** Tool runs observed through its own side effects: must equal `decisions`. */
  toolRuns: number;
  doubleExecutions: number;
  jobsContinued: number;
  /** How long deciding and enqueueing all N took beforehand (one process, serial; not timed). */
  enqueueMs: number;
  /** CPU of all worker processes together, per decision continued. */
  workerCpuUsPerDecision: number;
}

function startWorker(schema: string): {
  child: ChildProcess;
  ready: Promise<void>;
  done: Promise<{ continued: number; cpuUs: number }>;
} {
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, 'queue-worker.ts'), BENCH_PG_URL, schema],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes('ready\n')) markReady();
  });
  const done = new Promise<{ continued: number; cpuUs: number }>((resolve) => {
    child.on('close', () => {
      const last = out.trim().split('\n').at(-1) ?? '{}';
      try {
        const parsed = JSON.parse(last) as { continued?: number; cpuUs?: number };
        resolve({ continued: parsed.continued ?? 0, cpuUs: parsed.cpuUs ?? 0 });
      } catch {
        resolve({ continued: 0, cpuUs: 0 });
      }
    });
  });
  return { child, ready, done };
}

/** N decisions queued first, then continued by `workers` separate worker processes. */
export async function queueDecisions(workers: number, count: number): Promise<QueueRow> {
  const schema = `cs_bench_queue${workers}_${randomBytes(4).toString('hex')}`;
  const store = await createPostgresStore({ connectionString: BENCH_PG_URL, schema });
  // Creates the queue with countersign's settings; the jobs are then inserted through `boss`.
  const queue = await createPgBossQueue({
    connectionString: BENCH_PG_URL,
    schema: `${schema}_queue`,
    supervise: false,
  });
  const boss = new PgBoss({ connectionString: BENCH_PG_URL, schema: `${schema}_queue`, supervise: false });
  boss.on('error', () => undefined);
  await boss.start();
  const procs: ReturnType<typeof startWorker>[] = [];
  try {
    const agent = decisionAgent(store);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push((await agent.chat(`s-${i}`, 'Refund 1044.')).approvals[0]!.id);
    // Every decision is made first, its job held back; once all workers are ready, all jobs
    // are inserted in one statement. What is timed is the workers draining the queue, not the
    // one deciding process (which, sharing two cores with the workers, set the pace before and
    // made more workers look slower), nor the workers' start-up.
    const held: ContinuationJob[] = [];
    const holding: ContinuationQueue = {
      async enqueue(job) {
        held.push(job);
      },
      work: () => Promise.reject(new Error('not a worker')),
      close: async () => undefined,
    };
    const queued = agent.with({ continuations: holding });
    const enqueueStarted = performance.now();
    for (const id of ids) await queued.approve(id, { by: 'bench' });
    const enqueueMs = performance.now() - enqueueStarted;
    for (let i = 0; i < workers; i++) procs.push(startWorker(schema));
    await Promise.all(procs.map((p) => p.ready));
    const started = performance.now();
    await boss.insert(
      CONTINUATION_QUEUE,
      held.map((job) => ({ data: { session: job.session, reason: job.reason } })),
    );
    const completedSql = `SELECT count(*)::int AS n FROM "${schema}".sessions WHERE batch IS NULL AND message_count >= 4`;
    const elapsed = await admin(async (client) => {
      for (;;) {
        const { rows } = await client.query(completedSql);
        if ((rows[0] as { n: number }).n >= count) return performance.now() - started;
        if (performance.now() - started > 300_000) throw new Error('queue bench: sessions did not complete');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
    const keys = await admin(async (client) => {
      const { rows } = await client.query(
        `SELECT key FROM "${schema}".state WHERE namespace = 'bench' AND key LIKE 'ran:%'`,
      );
      return rows.map((row) => String((row as { key: string }).key));
    });
    let doubles = 0;
    for (const id of ids) if (keys.filter((key) => key.startsWith(`ran:${id}:`)).length > 1) doubles += 1;
    for (const p of procs) p.child.kill('SIGTERM');
    const continued = await Promise.all(procs.map((p) => p.done));
    return {
      workers,
      decisions: count,
      decisionsPerSecond: Math.round(count / (elapsed / 1000)),
      toolRuns: keys.length,
      doubleExecutions: doubles,
      jobsContinued: continued.reduce((sum, n) => sum + n.continued, 0),
      enqueueMs: Math.round(enqueueMs),
      workerCpuUsPerDecision: Math.round(continued.reduce((sum, n) => sum + n.cpuUs, 0) / count),
    };
  } finally {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGTERM');
    await boss.stop({ graceful: false });
    await queue.close();
    await store.close();
    await admin(async (client) => {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.query(`DROP SCHEMA IF EXISTS "${schema}_queue" CASCADE`);
    });
  }
}

export interface QueueBench {
  rawCommitsPerSecond: number[];
  rows: QueueRow[];
}

/**
 * 1, 2, 4 and 8 worker processes, interleaved `repeats` times (the machine is small and shared:
 * each round measures every worker count once, the median round of each is kept); null, with
 * a line saying why, when PostgreSQL does not answer.
 */
export async function benchQueue(
  count: number,
  repeats = 1,
  workerCounts: readonly number[] = [1, 2, 4, 8],
): Promise<QueueBench | null> {
  const problem = await postgresProblem();
  if (problem) {
    console.log(`\nContinuation queue bench skipped: PostgreSQL does not answer (${problem}).`);
    return null;
  }
  const runs = new Map<number, QueueRow[]>(workerCounts.map((n) => [n, []]));
  const rawCommitsPerSecond: number[] = [];
  for (let i = 0; i < repeats; i++) {
    rawCommitsPerSecond.push((await rawPostgresCommits(1000)).commitsPerSecond);
    for (const workers of workerCounts) runs.get(workers)!.push(await queueDecisions(workers, count));
  }
  const rows = workerCounts.map((workers) => {
    const sorted = [...runs.get(workers)!].sort((a, b) => a.decisionsPerSecond - b.decisionsPerSecond);
    return sorted[Math.floor(sorted.length / 2)]!;
  });
  return { rawCommitsPerSecond, rows };
}

export function printQueueTable(bench: QueueBench, repeats: number): void {
  console.log(
    `\nDecisions continued through pg-boss by separate worker processes (PostgreSQL, zero-latency model, median of ${repeats} interleaved runs)\n`,
  );
  console.table(
    bench.rows.map((row) => ({
      workers: row.workers,
      decisions: row.decisions,
      'decisions/s': row.decisionsPerSecond,
      '× one worker': Math.round((row.decisionsPerSecond / bench.rows[0]!.decisionsPerSecond) * 100) / 100,
      'worker CPU µs/decision': row.workerCpuUsPerDecision,
      'jobs continued': row.jobsContinued,
      'tool runs': row.toolRuns,
      'double executions': row.doubleExecutions,
      'enqueue ms': row.enqueueMs,
    })),
  );
  console.log(
    `Raw PostgreSQL commits/s (one connection) measured between runs: ${bench.rawCommitsPerSecond.join(', ')}`,
  );
}

if (import.meta.main) {
  const count = Number(process.env.BENCH_QUEUE_DECISIONS ?? 200);
  const repeats = Number(process.env.BENCH_REPEATS ?? 3);
  const bench = await benchQueue(count, repeats);
  if (bench) printQueueTable(bench, repeats);
}
