import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { kitchenAgent } from '../../examples/kitchen/app.ts';
import { continuationHandler } from '../../src/cli/worker-command.ts';
import { enqueueStalledSessions, startWorkerSweep } from '../../src/cli/worker-stalled-sweep.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import type { ContinuationJob, ContinuationQueue } from '../../src/queue/continuation-queue.ts';
import { createSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { bookstore, orderStatus } from '../helpers/bookstore-agent.ts';

/** An in-process queue that only records what was handed over. */
function recordingQueue(): ContinuationQueue & { jobs: ContinuationJob[] } {
  const jobs: ContinuationJob[] = [];
  return {
    jobs,
    enqueue: async (job) => {
      jobs.push(job);
    },
    work: async () => undefined,
    close: async () => undefined,
  };
}

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** What `approve --queue` killed between its decision and its enqueue leaves behind. */
async function decideOnly(store: Store, requestId: string): Promise<void> {
  const at = new Date().toISOString();
  const outcome = await store.decide(requestId, {
    verdict: 'approved',
    by: 'ops',
    reason: null,
    at,
    kind: 'person',
  });
  if (!outcome.won) throw new Error(`could not decide ${requestId}`);
}

/**
 * The worker's sweep in process, on a real SQLite store and a queue that records: the pg-boss
 * side of it (a real worker picking the session up at start) is in worker-queue.test.ts.
 */
describe("the worker's stalled-session sweep", () => {
  const dirs: string[] = [];
  const stores: SqliteStore[] = [];

  function sqlite(): SqliteStore {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-sweep-'));
    dirs.push(dir);
    const store = createSqliteStore({ path: join(dir, 'store.db') });
    stores.push(store);
    return store;
  }

  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("enqueues only the app's stalled sessions, and the handler then runs each call once", async () => {
    const store = sqlite();
    const { agent } = bookstore({ store });
    const stalled = await agent.chat('stalled', 'Please cancel my order 1044.', { principal: 'c-100' });
    await decideOnly(store, stalled.approvals[0]!.id);
    await agent.chat('waiting', 'Please cancel my order 1043.', { principal: 'c-100' });
    const kitchen = kitchenAgent.with({ store, model: createDemoModel() });
    const eggs = await kitchen.chat('eggs', "We're out of eggs, put a dozen on the list.");
    await decideOnly(store, eggs.approvals[0]!.id);

    const queue = recordingQueue();
    expect(await enqueueStalledSessions({ store, queue, agents: ['bookstore'] })).toEqual(['stalled']);
    expect(queue.jobs).toEqual([{ session: 'stalled', reason: 'stalled' }]);

    const lines: Array<Record<string, unknown>> = [];
    const handle = continuationHandler(
      new Map([['bookstore', agent]]),
      async (session) => (await store.getSession(session))?.agent ?? null,
      (line) => lines.push(line),
    );
    await handle(queue.jobs[0]!);
    // A duplicate job (the sweep can race a job still queued) finds nothing left to run.
    await handle(queue.jobs[0]!);
    expect(lines).toMatchObject([
      { event: 'continued', session: 'stalled', status: 'completed' },
      { event: 'continued', session: 'stalled', status: 'completed' },
    ]);
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
    expect(await store.listExecutions({ session: 'stalled' })).toMatchObject([
      { status: 'succeeded', attempts: 1 },
    ]);
    expect(await enqueueStalledSessions({ store, queue, agents: ['bookstore'] })).toEqual([]);
    expect(await enqueueStalledSessions({ store, queue, agents: ['kitchen'] })).toEqual(['eggs']);
  });

  it('sweeps at start and again every interval until stopped, and logs a failed sweep without stopping', async () => {
    const store = sqlite();
    const { agent } = bookstore({ store });
    const turn = await agent.chat('s', 'Please cancel my order 1044.', { principal: 'c-100' });
    await decideOnly(store, turn.approvals[0]!.id);
    let failOnce = true;
    const flaky: Store = {
      ...store,
      listStalledSessions: (query) => {
        if (failOnce) {
          failOnce = false;
          return Promise.reject(new Error('connection reset'));
        }
        return store.listStalledSessions(query);
      },
    };
    const queue = recordingQueue();
    const lines: Array<Record<string, unknown>> = [];
    const sweep = startWorkerSweep({
      store: flaky,
      queue,
      agents: ['bookstore'],
      intervalMs: 40,
      log: (line) => lines.push(line),
    });
    await until(() => queue.jobs.length >= 2);
    await sweep.stop();
    const enqueued = queue.jobs.length;
    expect(lines[0]).toEqual({ event: 'sweep-failed', message: 'connection reset', intervalMs: 40 });
    // The next sweep works: said once, then its sessions.
    expect(lines[1]).toMatchObject({ event: 'sweep-recovered', attempts: 1 });
    expect(lines.slice(2, 4)).toEqual([
      { event: 'stalled', sessions: ['s'] },
      { event: 'stalled', sessions: ['s'] },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(queue.jobs).toHaveLength(enqueued);
  });
  it('a sweep that keeps failing is one line, not one per sweep; one more when it works again', async () => {
    const store = sqlite();
    let down = true;
    let calls = 0;
    const flaky: Store = {
      ...store,
      listStalledSessions: (query) => {
        calls++;
        return down ? Promise.reject(new Error('connect ECONNREFUSED')) : store.listStalledSessions(query);
      },
    };
    const lines: Array<Record<string, unknown>> = [];
    const sweep = startWorkerSweep({
      store: flaky,
      queue: recordingQueue(),
      agents: ['bookstore'],
      intervalMs: 5,
      log: (line) => lines.push(line),
    });
    await until(() => calls >= 20);
    down = false;
    await until(() => lines.some((line) => line.event === 'sweep-recovered'));
    await sweep.stop();
    expect(lines.filter((line) => line.event === 'sweep-failed')).toEqual([
      { event: 'sweep-failed', message: 'connect ECONNREFUSED', intervalMs: 5 },
    ]);
    expect(lines.find((line) => line.event === 'sweep-recovered')?.attempts).toBeGreaterThanOrEqual(20);
  });
});
