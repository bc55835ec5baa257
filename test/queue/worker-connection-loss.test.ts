import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  storeUrl,
  terminateBackendsWhenBusy,
  withAdmin,
  withApplicationName,
} from '../helpers/postgres.ts';
import { startWorker, type WorkerLine, type WorkerProcess } from '../helpers/worker-process.ts';

const pg = await postgresForTests();

type Turn = { status: string; approvals: Array<{ id: string }> };

/** Backends of `app` whose last statement touched the pg-boss schema `queueSchema`. */
async function queueBackends(app: string, queueSchema: string): Promise<number> {
  return withAdmin(async (client) => {
    const { rows } = await client.query<{ n: string }>(
      'SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND position($2 in query) > 0',
      [app, queueSchema],
    );
    return Number(rows[0]?.n ?? 0);
  });
}

/**
 * `countersign worker` whose connections — the store's pool, pg-boss's pool and its LISTEN
 * connection — are terminated while it continues sessions: it stays up, the continuations in
 * hand are retried until they complete, and continuations enqueued afterwards are processed.
 */
describe.skipIf(pg === null)('worker on PostgreSQL when its connections are terminated', () => {
  const schema = freshSchema('worker_loss');
  let worker: WorkerProcess | undefined;
  afterAll(async () => {
    await worker?.stop();
    await dropSchema(schema);
    await dropSchema(`${schema}_queue`);
  });

  it('stays up, retries what was in hand, and keeps consuming after the connections come back', async () => {
    const app = `cs_test_worker_${randomBytes(4).toString('hex')}`;
    // The CLI runs with the plain URL, so only the worker's connections carry the name.
    const base = {
      COUNTERSIGN_STORE: storeUrl(schema),
      COUNTERSIGN_MODEL: 'demo',
      COUNTERSIGN_APP: 'bookstore',
    };
    const propose = async (session: string): Promise<string> => {
      const chat = await runCli(
        ['chat', '--as', 'backend', session, 'Please cancel my order 1044.', '--user', 'c-100', '--json'],
        base,
      );
      expect(chat.code, chat.stderr + chat.stdout).toBe(0);
      return (chat.json as Turn).approvals[0]!.id;
    };
    const approve = async (id: string) => {
      const approved = await runCli(['approve', id, '--queue', '--json'], base);
      expect(approved.code, approved.stderr + approved.stdout).toBe(0);
      expect((approved.json as Turn).status).toBe('continuing');
    };
    const completed = (session: string) => (line: WorkerLine) =>
      line.event === 'continued' && line.session === session && line.status === 'completed';

    // A backlog enqueued before the worker starts, so it is busy continuing sessions when its
    // connections are terminated.
    const sessions = Array.from({ length: 12 }, (_, i) => `wl-${i}`);
    for (const session of sessions) await approve(await propose(session));

    worker = startWorker({
      ...base,
      COUNTERSIGN_STORE: withApplicationName(storeUrl(schema), app),
      COUNTERSIGN_WORKER_SWEEP_MS: '0',
    });
    await worker.waitFor((line) => line.event === 'ready');

    // Eight terminations of all its connections (the store's, pg-boss's pool and LISTEN), each
    // after the worker printed a new line and while a store statement of a continuation is
    // running, so they land on work in flight.
    let terminated = 0;
    let lastTermination = 0;
    for (let round = 0; round < 8; round++) {
      const seen = worker.lines.length;
      await worker.waitFor(() => worker!.lines.length > seen, 30_000);
      if (round === 0) expect(await queueBackends(app, `${schema}_queue`)).toBeGreaterThan(0);
      terminated += await terminateBackendsWhenBusy(app, { busyWith: `"${schema}".` });
      lastTermination = Date.now();
    }
    expect(terminated).toBeGreaterThanOrEqual(8);
    expect(worker.child.exitCode).toBeNull();

    // Every continuation in hand completes in the end (pg-boss retries what failed).
    for (const session of sessions) await worker.waitFor(completed(session), 60_000);
    const allDoneMs = Date.now() - lastTermination;
    const retries = worker.lines.filter((line) => line.event === 'retry');
    for (const line of retries) expect(['STORE_UNAVAILABLE', 'SESSION_BUSY']).toContain(line.code);

    // And it keeps consuming: a continuation enqueued after the terminations is processed.
    const later = await propose('wl-later');
    await approve(later);
    const enqueuedAt = Date.now();
    const done = await worker.waitFor(completed('wl-later'), 60_000);
    expect(done.status).toBe('completed');
    const continuedMs = Math.max(0, Date.parse(done.at) - enqueuedAt);
    console.log(
      `worker connection loss: ${terminated} backends terminated in 8 rounds (pg-boss's included), ` +
        `${retries.length} retried jobs (${[...new Set(retries.map((line) => line.code))].join(', ') || 'none'}), ` +
        `all ${sessions.length} in hand completed within ${allDoneMs} ms of the last termination; ` +
        `a later continuation completed ${continuedMs} ms after its approve returned`,
    );

    expect(worker.child.exitCode).toBeNull();
    expect(worker.stderr()).not.toMatch(/Unhandled 'error' event|Connection terminated unexpectedly/);
    await worker.stop();
    expect((await worker.exited).code).toBe(0);
  }, 180_000);
});
