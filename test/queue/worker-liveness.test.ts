import { afterAll, describe, expect, it } from 'vitest';
import {
  dropSchema,
  freshSchema,
  livenessBackend,
  postgresForTests,
  storeUrl,
  terminateBackend,
} from '../helpers/postgres.ts';
import { startWorker, type WorkerLine, type WorkerProcess } from '../helpers/worker-process.ts';

const pg = await postgresForTests();

/**
 * `countersign worker` on PostgreSQL whose liveness lock connection is terminated while it
 * lives: it logs the loss and the hold again (how long it was gone), and only its own
 * connection was ended — the other worker's lock connection is untouched.
 */
describe.skipIf(pg === null)('worker on PostgreSQL: its liveness lock lost and held again', () => {
  const schema = freshSchema('worker_liveness');
  const workers: WorkerProcess[] = [];
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await dropSchema(schema);
    await dropSchema(`${schema}_queue`);
  });

  it('logs one line when its lock connection is terminated and one when it holds the lock again', async () => {
    const env = {
      COUNTERSIGN_STORE: storeUrl(schema),
      COUNTERSIGN_MODEL: 'demo',
      COUNTERSIGN_APP: 'bookstore',
      COUNTERSIGN_WORKER_SWEEP_MS: '0',
    };
    // One first, so the two do not race to create the queue's schema.
    const a = startWorker(env);
    workers.push(a);
    const aReady = await a.waitFor((line) => line.event === 'ready');
    const b = startWorker(env);
    workers.push(b);
    const bReady = await b.waitFor((line) => line.event === 'ready');
    // A worker holds its lock from the start: the ready line names its token.
    const aLock = (await livenessBackend(a.child.pid!))!;
    const bLock = (await livenessBackend(b.child.pid!))!;
    expect(aLock.name).toBe(`countersign-liveness ${aReady.pid} ${aReady.token}`);
    expect(bLock.name).toBe(`countersign-liveness ${bReady.pid} ${bReady.token}`);

    expect(await terminateBackend(aLock)).toBe(true);
    const held = await a.waitFor((line) => line.event === 'liveness' && line.held === true, 10_000);
    const liveness = (worker: WorkerProcess) => worker.lines.filter((line) => line.event === 'liveness');
    const strip = ({ at: _at, ...line }: WorkerLine) => line;
    expect(liveness(a).map(strip)).toEqual([
      {
        event: 'liveness',
        held: false,
        token: aReady.token,
        reason: 'terminating connection due to administrator command',
      },
      { event: 'liveness', held: true, token: aReady.token, lostMs: held.lostMs, attempts: held.attempts },
    ]);
    expect(held.lostMs).toEqual(expect.any(Number));
    expect(held.lostMs as number).toBeLessThan(5000);
    expect(held.attempts).toEqual(expect.any(Number));
    console.info(
      `worker logged:\n${liveness(a)
        .map((line) => JSON.stringify(line))
        .join('\n')}`,
    );

    const aAgain = (await livenessBackend(a.child.pid!))!;
    expect(aAgain.name).toBe(aLock.name);
    expect(aAgain.pid).not.toBe(aLock.pid);
    expect(await livenessBackend(b.child.pid!)).toEqual(bLock);
    expect(liveness(b)).toEqual([]);
    expect(a.child.exitCode).toBeNull();
  }, 60_000);
});
