import type { PgBoss } from 'pg-boss';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import type { ContinuationJob, ContinuationQueue, ContinuationWorkOptions } from '../continuation-queue.ts';

export const CONTINUATION_QUEUE = 'countersign-continuations';

export interface PgBossQueueOptions {
  /** A plain PostgreSQL connection string (no countersign `?schema=` parameter). */
  connectionString: string;
  /** The schema pg-boss keeps its tables in (default `countersign_queue`). */
  schema?: string;
  /**
   * Seconds without a heartbeat after which a job in hand is taken as lost and retried
   * (default 10, pg-boss's minimum). Workers send heartbeats on their own.
   */
  heartbeatSeconds?: number;
  /** How often the supervisor looks for lost jobs, in seconds (default 2). */
  superviseIntervalSeconds?: number;
  /** Run the supervisor here (default true); an enqueue-only client (the CLI) turns it off. */
  supervise?: boolean;
  /** How often an idle worker polls, in seconds (default 0.5). */
  pollingIntervalSeconds?: number;
  /**
   * Wake idle workers with LISTEN/NOTIFY when a job is sent (default false). pg-boss wakes
   * every worker process for every job and all but one fetch nothing: measured with 8 workers
   * it more than doubled the CPU per decision and halved throughput (docs/workers.md). Off,
   * an idle worker finds a new job at its next poll (0.25 s on average) and a worker with a
   * backlog fetches again as soon as a job is done.
   */
  wakeOnSend?: boolean;
}

/**
 * Timing, so that pg-boss itself gives a SIGKILLed worker's job to another within ~15 s: a
 * missed heartbeat (10 s) + the next supervisor pass (2 s) + the retry delay (1 s) + a poll
 * (0.5 s). That is the fallback. The fast path is the workers' takeover watch
 * (src/cli/worker-takeover.ts, through inHand below): about 0.5–1.4 s on the same host and 1.4–2.2 s
 * from another (the PostgreSQL liveness lock, src/liveness/postgres/). The fallback remains
 * for what liveness cannot see: a host that vanished without closing its connections (the
 * server keeps the lock until TCP keepalive gives up), a holder with no token.
 *
 * Why pg-boss's own settings are not tightened further: `heartbeatSeconds` below 10 is refused
 * by pg-boss 12 itself (attorney.js: "heartbeatSeconds must be an integer >= 10"), and a
 * worker refreshes its heartbeat every half of it, so a dead worker's job is failed 5–10 s
 * after the death plus a supervisor pass. The supervisor could run every second (its minimum)
 * instead of every 2 s: that saves at most one second on the fallback, for a claim on the
 * queue row by every worker every second and the monitor's stats aggregate twice as often.
 * Not worth it while the watch hands jobs on in seconds.
 */
const JOB_DEFAULTS = {
  // A busy session (SESSION_BUSY) or a passing store outage is retried; 30 tries span minutes.
  retryLimit: 30,
  retryDelay: 1,
  // A continuation that runs for longer than this is stuck (a model call hung, say).
  expireInSeconds: 15 * 60,
  deleteAfterSeconds: 24 * 60 * 60,
} as const;

/** The continuation queue on pg-boss, in a schema of its own. */
export async function createPgBossQueue(options: PgBossQueueOptions): Promise<ContinuationQueue> {
  const { PgBoss } = await import('pg-boss');
  const heartbeatSeconds = options.heartbeatSeconds ?? 10;
  const supervise = options.superviseIntervalSeconds ?? 2;
  const boss: PgBoss = new PgBoss({
    connectionString: options.connectionString,
    schema: options.schema ?? 'countersign_queue',
    supervise: options.supervise ?? true,
    superviseIntervalSeconds: supervise,
    monitorIntervalSeconds: supervise,
    // The ready count that turns on burst fetching (below) is read from this cache.
    queueCacheIntervalSeconds: 1,
    useListenNotify: options.wakeOnSend === true,
    max: 4,
    application_name: 'countersign-queue',
  });
  // Without a listener an 'error' event would end the process; pg-boss retries on its own.
  boss.on('error', (error: Error) => {
    if (process.env.COUNTERSIGN_DEBUG) process.stderr.write(`queue: ${error.message}\n`);
  });
  await boss.start();
  await boss.createQueue(CONTINUATION_QUEUE, {
    ...JOB_DEFAULTS,
    heartbeatSeconds,
    notify: options.wakeOnSend === true,
  });
  // Its own table (pg-boss keeps a table per queue or one shared): where inHand() looks.
  const table = (await boss.getQueue(CONTINUATION_QUEUE))?.table ?? 'job';
  const bossSchema = options.schema ?? 'countersign_queue';
  const pollingIntervalSeconds = options.pollingIntervalSeconds ?? 0.5;
  let closed = false;

  return {
    async enqueue(job) {
      if (typeof job.session !== 'string' || job.session === '') {
        throw new InvalidInputError('A continuation needs a session.');
      }
      await boss.send(CONTINUATION_QUEUE, { session: job.session, reason: job.reason });
    },

    async work(handler, workOptions: ContinuationWorkOptions = {}) {
      const concurrency = Math.max(1, workOptions.concurrency ?? 1);
      await boss.work<ContinuationJob>(
        CONTINUATION_QUEUE,
        {
          batchSize: 1,
          localConcurrency: concurrency,
          pollingIntervalSeconds,
          notifyPollingIntervalSeconds: Math.max(1, pollingIntervalSeconds),
          // With a backlog, fetch the next job as soon as one is done instead of after a poll.
          burstWhenReadyExceeds: 1,
        },
        async ([job]) => {
          if (!job) return;
          await handler({ session: job.data.session, reason: job.data.reason });
        },
      );
    },

    async inHand(limit) {
      // Active jobs only: at most workers × concurrency rows, found through pg-boss's index on
      // (name, state); never the backlog or the finished jobs.
      const rows = (await boss
        .getDb()
        .executeSql(
          `SELECT data->>'session' AS session FROM "${bossSchema}"."${table}" WHERE name = $1 AND state = 'active' LIMIT $2`,
          [CONTINUATION_QUEUE, limit],
        )) as { rows: Array<{ session: string | null }> };
      return rows.rows.flatMap((row) => (typeof row.session === 'string' ? [row.session] : []));
    },

    async close() {
      if (closed) return;
      closed = true;
      await boss.stop({ graceful: true, timeout: 30_000 });
    },
  };
}
