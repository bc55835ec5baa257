import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl } from '../helpers/postgres.ts';
import { startWorker, type WorkerProcess } from '../helpers/worker-process.ts';

type Turn = { session: string; status: string; approvals: Array<{ id: string }> };
type Execution = { requestId: string; status: string };

const pg = await postgresForTests();

/**
 * Two real `countersign worker` processes are running when one of them is SIGKILLed mid-job;
 * the other must take the job over within 5 s (worker-takeover.ts), not after pg-boss's
 * heartbeat timeout (10 s at least, 11–15 s measured before). Both workers are armed to die
 * right after the tool runs, so whichever takes the job dies; the kitchen's tool is not
 * idempotent, so the survivor never runs it again (it surfaces `unknown`) and lives.
 */
describe.skipIf(pg === null)('takeover after a SIGKILLed worker', () => {
  const schemas: string[] = [];
  const workers: WorkerProcess[] = [];
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    for (const schema of schemas) {
      await dropSchema(schema);
      await dropSchema(`${schema}_queue`);
    }
  });

  it('the surviving worker continues the dead one’s session within 5 s, and the tool ran once', async () => {
    const schema = freshSchema('takeover');
    schemas.push(schema);
    const base = {
      COUNTERSIGN_STORE: storeUrl(schema),
      COUNTERSIGN_MODEL: 'demo',
      COUNTERSIGN_APP: 'kitchen',
    };
    const chat = await runCli(
      [
        'chat',
        '--as',
        'backend',
        'k-9',
        "We're out of eggs, put a dozen on the list.",
        '--user',
        'c-100',
        '--json',
      ],
      base,
    );
    expect(chat.code, chat.stderr + chat.stdout).toBe(0);
    const id = (chat.json as Turn).approvals[0]!.id;
    // Sweeps off: only the takeover watch (or pg-boss's own retry) can continue the session.
    const armed = { ...base, COUNTERSIGN_TEST_FAULT: 'after-tool', COUNTERSIGN_WORKER_SWEEP_MS: '0' };
    const pair = [startWorker(armed), startWorker(armed)];
    workers.push(...pair);
    await Promise.all(pair.map((worker) => worker.waitFor((line) => line.event === 'ready')));

    const approve = await runCli(['approve', id, '--queue', '--json'], base);
    expect(approve.code, approve.stderr + approve.stdout).toBe(0);
    const death = await Promise.race(pair.map((worker, i) => worker.exited.then((exit) => ({ ...exit, i }))));
    expect(death.signal).toBe('SIGKILL');
    const survivor = pair[1 - death.i]!;
    const took = await survivor.waitFor(
      (line) => line.event === 'continued' && line.session === 'k-9',
      15_000,
    );
    const takeoverMs = Date.parse(took.at) - death.at;
    console.info(`k-9: taken over ${takeoverMs} ms after the SIGKILL`);
    expect(survivor.lines.some((line) => line.event === 'taken-over')).toBe(true);
    expect(takeoverMs).toBeLessThan(5000);
    expect(took.status).toBe('awaiting_reconciliation');
    // Exactly one execution record: the dead worker's, now unknown; no second run.
    const ledger = (await runCli(['executions', '--session', 'k-9', '--json'], base)).json as Execution[];
    expect(ledger).toEqual([expect.objectContaining({ requestId: id, status: 'unknown' })]);
    expect(survivor.child.exitCode).toBeNull();
  }, 60_000);
});
