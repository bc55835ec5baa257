import { describe, expect, it } from 'vitest';
import { continuationHandler } from '../../src/cli/worker-command.ts';
import { SessionBusyError } from '../../src/core/errors/session-busy-error.ts';
import type { ContinuationJob, ContinuationQueue } from '../../src/queue/continuation-queue.ts';
import { bookstore, orderStatus } from '../helpers/bookstore-agent.ts';
import { runCli, tempStore } from '../helpers/cli.ts';

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

describe('continuations handed to a queue (in process)', () => {
  it('decide enqueues the session after the decision commits and answers continuing; resume finishes it', async () => {
    const { agent, store } = bookstore();
    const turn = await agent.chat('s', 'Please cancel my order 1044.', { principal: 'c-100' });
    const id = turn.approvals[0]!.id;
    const queue = recordingQueue();
    const queued = agent.with({ continuations: queue });

    const answer = await queued.approve(id, { by: 'ops' });
    expect(answer).toEqual({ session: 's', status: 'continuing', reply: null, approvals: [], unknown: [] });
    expect(queue.jobs).toEqual([{ session: 's', reason: 'decided' }]);
    // Decided, not run: nothing executed yet.
    expect((await store.getApproval(id))?.status).toBe('approved');
    expect(await store.getExecution(id)).toBeFalsy();
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');

    // The worker's handler: resume. A duplicate job is harmless.
    const done = await agent.resume('s');
    expect(done.status).toBe('completed');
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
    expect((await agent.resume('s')).status).toBe('completed');
    expect((await store.getExecution(id))?.status).toBe('succeeded');
  });

  it('without a queue, decide continues inline exactly as before', async () => {
    const { agent } = bookstore();
    const turn = await agent.chat('s', 'Please cancel my order 1044.', { principal: 'c-100' });
    const done = await agent.approve(turn.approvals[0]!.id, { by: 'ops' });
    expect(done.status).toBe('completed');
  });

  it('the worker handler retries a busy session (throws) and completes a missing one', async () => {
    const { agent } = bookstore();
    const lines: Array<Record<string, unknown>> = [];
    const busy = { ...agent, resume: async () => Promise.reject(new SessionBusyError('busy')) };
    const handler = continuationHandler(
      new Map([['bookstore', busy]]),
      async (session) => (session === 'gone' ? null : 'bookstore'),
      (line) => lines.push(line),
    );
    await expect(handler({ session: 's', reason: 'decided' })).rejects.toMatchObject({
      code: 'SESSION_BUSY',
    });
    await expect(handler({ session: 'gone', reason: 'decided' })).resolves.toBeUndefined();
    expect(lines.map((line) => line.event)).toEqual(['retry', 'skipped']);
  });

  it('approve --queue on SQLite is refused with a hint; the worker needs PostgreSQL', async () => {
    const env = { COUNTERSIGN_STORE: tempStore(), COUNTERSIGN_MODEL: 'demo' };
    const worker = await runCli(['worker', '--json'], env);
    expect(worker.code).toBe(1);
    expect((worker.json as { error: { message: string } }).error.message).toMatch(/PostgreSQL/);
    const chat = await runCli(
      ['chat', '--as', 'backend', 's', 'Please cancel my order 1044.', '--user', 'c-100', '--json'],
      env,
    );
    const id = (chat.json as { approvals: Array<{ id: string }> }).approvals[0]!.id;
    const queued = await runCli(['approve', id, '--queue', '--json'], env);
    expect(queued.code).toBe(1);
    // Refused before deciding: the request is still waiting, and an inline approve still works.
    const inline = await runCli(['approve', id, '--json'], env);
    expect((inline.json as { status: string }).status).toBe('completed');
  });
});
