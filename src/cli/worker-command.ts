import type { Agent } from '../agent/create-agent.ts';
import { livenessOf } from '../agent/lease.ts';
import { CountersignError } from '../core/errors/countersign-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { watchLiveness } from '../liveness/liveness-log.ts';
import { thisProcess } from '../liveness/process-space.ts';
import type { ContinuationJob, ContinuationQueue } from '../queue/continuation-queue.ts';
import type { CommandInput } from './command-input.ts';
import { workerLogLine } from './worker-log-line.ts';
import { startWorkerSweep } from './worker-stalled-sweep.ts';
import { startTakeoverWatch } from './worker-takeover.ts';

const postgresUrl = /^postgres(?:ql)?:\/\//i;

/**
 * The continuation queue next to the store named by COUNTERSIGN_STORE: pg-boss in the schema
 * `<store schema>_queue` of the same database. Only PostgreSQL stores have one.
 */
export async function openContinuationQueue(
  env: NodeJS.ProcessEnv,
  options: { supervise?: boolean } = {},
): Promise<ContinuationQueue> {
  const spec = env.COUNTERSIGN_STORE?.trim() ?? '';
  if (!postgresUrl.test(spec)) {
    throw new InvalidInputError('Continuations on a queue need a PostgreSQL store.', {
      hint: 'Set COUNTERSIGN_STORE=postgres://USER@HOST:PORT/DB[?schema=NAME]. With SQLite, decisions continue inline.',
    });
  }
  const { parsePostgresSpec } = await import('../store/postgres/postgres-spec.ts');
  const { createPgBossQueue } = await import('../queue/pg-boss/pg-boss-queue.ts');
  const { connectionString, schema } = parsePostgresSpec(spec, env);
  return createPgBossQueue({
    connectionString,
    schema: `${schema}_queue`.slice(0, 63),
    ...(options.supervise === undefined ? {} : { supervise: options.supervise }),
  });
}

/** Runs `work` with the agent bound to the queue (`approve --queue`), then closes the queue. */
export async function withContinuations<T>(
  env: NodeJS.ProcessEnv,
  agent: Agent,
  work: (agent: Agent) => Promise<T>,
): Promise<T> {
  const queue = await openContinuationQueue(env, { supervise: false });
  try {
    return await work(agent.with({ continuations: queue }));
  } finally {
    await queue.close();
  }
}

/**
 * Continues sessions handed over by decisions: `agent.resume(session)`, idempotent by
 * construction. A session another process is running (SESSION_BUSY) is retried later rather
 * than completed: the run holding it may have started before the decision and end without
 * seeing it, and a later resume of a session with nothing to do costs one read.
 */
export function continuationHandler(
  agents: ReadonlyMap<string, Agent>,
  sessionAgent: (session: string) => Promise<string | null>,
  log: (line: Record<string, unknown>) => void,
): (job: ContinuationJob) => Promise<void> {
  return async (job) => {
    const started = Date.now();
    const name = await sessionAgent(job.session);
    if (name === null) {
      log({ event: 'skipped', session: job.session, reason: 'no such session' });
      return;
    }
    const agent = agents.get(name);
    if (!agent) throw new Error(`This worker's app has no agent ${name} (session ${job.session}).`);
    try {
      const turn = await agent.resume(job.session);
      log({ event: 'continued', session: job.session, status: turn.status, ms: Date.now() - started });
    } catch (error) {
      const code = CountersignError.is(error) ? error.code : 'INTERNAL';
      log({ event: 'retry', session: job.session, code, message: (error as Error).message });
      throw error;
    }
  };
}

/**
 * `countersign worker`: runs continuations for every agent of the app until SIGINT/SIGTERM,
 * and enqueues one for each stalled session at start and every 30 s after.
 */
export async function workerCommand({ values, context, out }: CommandInput): Promise<number> {
  const concurrency = Number(values.concurrency ?? 1);
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new InvalidInputError(`--concurrency must be a whole number >= 1, not ${values.concurrency}.`);
  }
  const queue = await openContinuationQueue(process.env);
  try {
    const store = await context.store({ check: 'quick' });
    const app = await context.app();
    const agents = new Map<string, Agent>();
    for (const agent of app.agents) agents.set(agent.name, await context.agent(agent.name));
    const log = (line: Record<string, unknown>) => {
      if (out.json) process.stdout.write(`${JSON.stringify({ at: new Date().toISOString(), ...line })}\n`);
      else out.print(workerLogLine(line));
    };
    const stop = new Promise<string>((resolve) => {
      process.once('SIGINT', () => resolve('SIGINT'));
      process.once('SIGTERM', () => resolve('SIGTERM'));
    });
    await queue.work(
      continuationHandler(agents, async (session) => (await store.getSession(session))?.agent ?? null, log),
      { concurrency },
    );
    // Logged when the liveness lock is lost, while it stays lost (throttled) and when it is held
    // again: while it is lost, workers on other hosts may take over the sessions this one runs.
    const liveness = livenessOf(store);
    // After the first attempt to hold it: what the ready line says, so the log shows changes only.
    const token = await liveness.token();
    const unwatch = watchLiveness(liveness, log);
    log({
      event: 'ready',
      pid: process.pid,
      space: thisProcess().space,
      liveness: liveness.kind,
      token,
      agents: [...agents.keys()],
      concurrency,
    });
    // Decisions whose continuation was never enqueued (the decider died in between) would
    // otherwise wait for someone to run `resume`.
    const sweepMs = msSetting(process.env.COUNTERSIGN_WORKER_SWEEP_MS, 30_000, 'COUNTERSIGN_WORKER_SWEEP_MS');
    const sweep =
      sweepMs === 0
        ? null
        : startWorkerSweep({ store, queue, agents: [...agents.keys()], log, intervalMs: sweepMs });
    // A worker killed mid-job, on this host or (PostgreSQL liveness) another: its job is handed
    // on within a second or two, instead of after pg-boss's heartbeat timeout (10 s at least).
    const takeoverMs = msSetting(
      process.env.COUNTERSIGN_WORKER_TAKEOVER_MS,
      1000,
      'COUNTERSIGN_WORKER_TAKEOVER_MS',
    );
    const takeover =
      takeoverMs === 0 ? null : startTakeoverWatch({ store, queue, log, intervalMs: takeoverMs });
    const signal = await stop;
    log({ event: 'stopping', signal });
    await takeover?.stop();
    await sweep?.stop();
    unwatch();
  } finally {
    await queue.close();
  }
  return 0;
}

/**
 * COUNTERSIGN_WORKER_SWEEP_MS (between sweeps for stalled sessions) and
 * COUNTERSIGN_WORKER_TAKEOVER_MS (between looks for dead holders): 0 turns either off.
 */
function msSetting(text: string | undefined, fallback: number, name: string): number {
  if (text === undefined || text === '') return fallback;
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms < 0) {
    throw new InvalidInputError(`${name} must be a whole number of milliseconds, got "${text}".`, {
      hint: `Use 0 to turn it off, or e.g. ${fallback}.`,
    });
  }
  return ms;
}
