import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl } from '../helpers/postgres.ts';
import { startWorker, type WorkerProcess } from '../helpers/worker-process.ts';

type Turn = {
  session: string;
  status: string;
  reply: string | null;
  approvals: Array<{ id: string }>;
  unknown: Array<{ requestId: string }>;
};
type Execution = { requestId: string; status: string; idempotencyKey: string };

const pg = await postgresForTests();

/**
 * Continuations on a real queue: every step is a separate process on one PostgreSQL schema
 * (and its pg-boss schema), with the offline demo model. Workers are `countersign worker`.
 */
describe.skipIf(pg === null)('continuations on pg-boss (separate worker processes)', () => {
  const schemas: string[] = [];
  const workers: WorkerProcess[] = [];

  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    for (const schema of schemas) {
      await dropSchema(schema);
      await dropSchema(`${schema}_queue`);
    }
  });

  function env(app: 'bookstore' | 'kitchen'): Record<string, string> {
    const schema = freshSchema(`queue_${app}`);
    schemas.push(schema);
    return { COUNTERSIGN_STORE: storeUrl(schema), COUNTERSIGN_MODEL: 'demo', COUNTERSIGN_APP: app };
  }

  function worker(base: Record<string, string>, extra: Record<string, string> = {}): WorkerProcess {
    const started = startWorker({ ...base, ...extra });
    workers.push(started);
    return started;
  }

  async function propose(base: Record<string, string>, session: string, text: string): Promise<string> {
    const chat = await runCli(['chat', '--as', 'backend', session, text, '--user', 'c-100', '--json'], base);
    expect(chat.code, chat.stderr + chat.stdout).toBe(0);
    const turn = chat.json as Turn;
    expect(turn.status).toBe('awaiting_approval');
    return turn.approvals[0]!.id;
  }

  async function executions(base: Record<string, string>, session: string): Promise<Execution[]> {
    return (await runCli(['executions', '--session', session, '--json'], base)).json as Execution[];
  }

  it('two workers, one decision: exactly one continues it, the tool runs once, the session completes', async () => {
    const base = env('bookstore');
    const id = await propose(base, 'q-1', 'Please cancel my order 1044.');
    const a = worker(base);
    const b = worker(base);
    await Promise.all([a.waitFor((l) => l.event === 'ready'), b.waitFor((l) => l.event === 'ready')]);

    const approve = await runCli(['approve', id, '--queue', '--as', 'ops', '--json'], base);
    expect(approve.code, approve.stderr + approve.stdout).toBe(0);
    expect(approve.json).toMatchObject({ session: 'q-1', status: 'continuing', reply: null });

    const done = await Promise.race([
      a.waitFor((l) => l.event === 'continued' && l.session === 'q-1'),
      b.waitFor((l) => l.event === 'continued' && l.session === 'q-1'),
    ]);
    expect(done.status).toBe('completed');
    // Give the other worker a moment to (wrongly) pick up a second copy.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const continued = [...a.lines, ...b.lines].filter((l) => l.event === 'continued');
    expect(continued).toHaveLength(1);
    expect(await executions(base, 'q-1')).toEqual([
      expect.objectContaining({ requestId: id, status: 'succeeded' }),
    ]);
    const resumed = await runCli(['resume', 'q-1', '--json'], base);
    expect((resumed.json as Turn).status).toBe('completed');
    expect((resumed.json as Turn).reply).toContain('1044');
    await Promise.all([a.stop(), b.stop()]);
    expect((await a.exited).code).toBe(0);
    expect((await b.exited).code).toBe(0);
  }, 60_000);

  it('a decision whose continuation was never enqueued (SIGKILL in between) is found and continued by a worker at start', async () => {
    const base = env('bookstore');
    const id = await propose(base, 'q-3', 'Please cancel my order 1044.');
    const approve = await runCli(['approve', id, '--queue', '--json'], {
      ...base,
      COUNTERSIGN_TEST_FAULT: 'after-decision',
    });
    expect(approve.signal).toBe('SIGKILL');
    // Decided, and nothing will ever pick it up: no job, no run.
    const shown = await runCli(['show', id, '--json'], base);
    expect(shown.json).toMatchObject({ status: 'approved' });
    expect(await executions(base, 'q-3')).toEqual([]);

    const rescuer = worker(base);
    expect(await rescuer.waitFor((l) => l.event === 'stalled')).toMatchObject({ sessions: ['q-3'] });
    const done = await rescuer.waitFor((l) => l.event === 'continued' && l.session === 'q-3');
    expect(done.status).toBe('completed');
    expect(await executions(base, 'q-3')).toEqual([
      expect.objectContaining({ requestId: id, status: 'succeeded' }),
    ]);
    const resumed = await runCli(['resume', 'q-3', '--json'], base);
    expect((resumed.json as Turn).reply).toContain('1044');
    await rescuer.stop();
    expect((await rescuer.exited).code).toBe(0);
    // One continuation: the sweep's. Nothing else was queued, and nothing ran twice.
    expect(rescuer.lines.filter((l) => l.event === 'continued')).toHaveLength(1);
  }, 60_000);

  async function killedMidRun(
    base: Record<string, string>,
    session: string,
    text: string,
  ): Promise<{ id: string; takeoverMs: number; status: string | undefined }> {
    const id = await propose(base, session, text);
    const doomed = worker(base, { COUNTERSIGN_TEST_FAULT: 'after-tool' });
    await doomed.waitFor((l) => l.event === 'ready');
    const approve = await runCli(['approve', id, '--queue', '--json'], base);
    expect((approve.json as Turn).status).toBe('continuing');
    const death = await doomed.exited;
    expect(death.signal).toBe('SIGKILL');
    // The execution was started and the tool ran; its result was never recorded.
    expect(await executions(base, session)).toEqual([
      expect.objectContaining({ requestId: id, status: 'started' }),
    ]);

    // The sweep is off here: this is pg-boss giving the dead worker's job to another.
    const rescuer = worker(base, { COUNTERSIGN_WORKER_SWEEP_MS: '0' });
    const took = await rescuer.waitFor((l) => l.event === 'continued' && l.session === session, 30_000);
    const takeoverMs = Date.now() - death.at;
    console.info(`${session}: taken over ${takeoverMs} ms after the SIGKILL`);
    return { id, takeoverMs, status: took.status };
  }

  it('SIGKILL after an idempotent tool ran: another worker takes over within 30 s and reruns it under the same key', async () => {
    const base = env('bookstore');
    const { id, takeoverMs, status } = await killedMidRun(base, 'q-2', 'Please cancel my order 1044.');
    expect(takeoverMs).toBeLessThan(30_000);
    expect(status).toBe('completed');
    const ledger = await executions(base, 'q-2');
    expect(ledger).toEqual([
      expect.objectContaining({ requestId: id, status: 'succeeded', idempotencyKey: `countersign:${id}` }),
    ]);
    const resumed = await runCli(['resume', 'q-2', '--json'], base);
    expect((resumed.json as Turn).status).toBe('completed');
  }, 60_000);

  it('SIGKILL after a non-idempotent tool ran: the takeover surfaces unknown, never a second run', async () => {
    const base = env('kitchen');
    const { id, takeoverMs, status } = await killedMidRun(
      base,
      'k-1',
      "We're out of eggs, put a dozen on the list.",
    );
    expect(takeoverMs).toBeLessThan(30_000);
    expect(status).toBe('awaiting_reconciliation');
    expect(await executions(base, 'k-1')).toEqual([
      expect.objectContaining({ requestId: id, status: 'unknown' }),
    ]);
    // The tool ran exactly once (the killed worker's run): one dozen eggs, not two.
    const reader = await runCli(
      ['chat', '--as', 'backend', 'reader', "What's on my shopping list?", '--json'],
      base,
    );
    expect(((reader.json as Turn).reply ?? '').match(/eggs/g) ?? []).toHaveLength(1);
    const resumed = await runCli(['resume', 'k-1', '--json'], base);
    expect((resumed.json as Turn).status).toBe('awaiting_reconciliation');
  }, 60_000);
});
