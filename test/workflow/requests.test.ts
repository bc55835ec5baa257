import { describe, expect, it } from 'vitest';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import type { JsonValue } from '../../src/core/json.ts';
import type { CheckpointStore } from '../../src/store/checkpoint-store.ts';
import { createWorkflowRunner } from '../../src/workflow/runner.ts';
import { expectLinearChain, harness, reviewWorkflow, stateOf } from './helpers.ts';

const approve = { approved: true, note: 'Approved, photo checked.' };

async function waitingRefund(run = 'refund-1040', order = 1040) {
  const h = harness([refundWorkflow]);
  const view = await h.runner.start('refund', run, order);
  return { ...h, view, request: view.requests[0]! };
}

describe('refund through the runner', () => {
  it('prepare computes the case, the run waits at manager-approval, execute issues the refund', async () => {
    const { runner, view, request } = await waitingRefund();
    expect(view).toMatchObject({
      run: 'refund-1040',
      workflow: 'refund',
      version: 1,
      status: 'awaiting_input',
      outputs: [],
    });
    expect(view.requests).toEqual([
      {
        id: expect.stringMatching(/^req_/),
        port: 'manager-approval',
        data: { orderId: 1040, amount: 35, reason: 'Damaged cover reported by customer' },
        createdAt: expect.any(String),
        // The default TTL, as for agents' approvals: 24h.
        expiresAt: new Date(Date.parse(view.requests[0]!.createdAt) + 24 * 3_600_000).toISOString(),
      },
    ]);
    const done = await runner.respond('refund-1040', request.id, approve, { by: 'mona' });
    expect(done).toMatchObject({
      status: 'completed',
      requests: [],
      outputs: ['Refund issued: 35.00 for order 1040. Manager note: Approved, photo checked.'],
    });
  });

  it('a declined refund says so with the note and issues nothing', async () => {
    const { runner, checkpoints, request } = await waitingRefund();
    const done = await runner.respond('refund-1040', request.id, { approved: false, note: 'No photo.' });
    expect(done.outputs).toEqual(['Refund declined for order 1040 (35.00). Manager note: No photo.']);
    expect(await checkpoints.getState('bookstore', 'refund:1040')).toBeUndefined();
  });

  it('the same order is never refunded twice, even by two runs', async () => {
    const { runner, checkpoints, request } = await waitingRefund('first');
    const second = await runner.start('refund', 'second', 1040);
    await runner.respond('first', request.id, approve, { by: 'mona' });
    const again = await runner.respond('second', second.requests[0]!.id, approve, { by: 'max' });
    expect(again.outputs[0]).toMatch(
      /^Refund issued already: 35\.00 for order 1040 by run first .*nothing was refunded again/,
    );
    expect(await checkpoints.getState('bookstore', 'refund:1040')).toMatchObject({
      run: 'first',
      approvedBy: 'mona',
    });
  });

  it('an unknown order fails the run in prepare with NOT_FOUND', async () => {
    const { runner } = harness([refundWorkflow]);
    expect(await runner.start('refund', 'r', 9999)).toMatchObject({
      status: 'failed',
      error: { code: 'NOT_FOUND', executor: 'prepare' },
    });
  });
});

describe('answering requests', () => {
  it('checks the answer against the port: a wrong shape is INVALID_INPUT and the request stays answerable', async () => {
    const { runner, request } = await waitingRefund();
    const wrongs: JsonValue[] = [{ approved: 'yes', note: 'x' }, { approved: true }, 'approve', null];
    for (const wrong of wrongs) {
      const attempt = runner.respond('refund-1040', request.id, wrong);
      await expect(attempt).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
    await expect(runner.respond('refund-1040', request.id, { approved: true })).rejects.toThrow(
      /field "note"/,
    );
    expect((await runner.respond('refund-1040', request.id, approve)).status).toBe('completed');
  });

  it("an unknown request, a port name instead of a request, or another run's request is NOT_FOUND", async () => {
    const { runner, request } = await waitingRefund();
    await runner.start('refund', 'other', 1043);
    await expect(runner.respond('refund-1040', 'req_nope', approve)).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await expect(runner.respond('refund-1040', 'manager-approval', approve)).rejects.toThrow(
      new RegExp(`Pending now: ${request.id} \\(manager-approval\\)`),
    );
    await expect(runner.respond('other', request.id, approve)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(runner.respond('no-such-run', request.id, approve)).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it('answers once: the second answer is ALREADY_DECIDED naming the first, and nothing runs again', async () => {
    const { runner, checkpoints, request } = await waitingRefund();
    await runner.respond('refund-1040', request.id, approve, { by: 'mona' });
    const historyBefore = await runner.history('refund-1040');
    const second = runner.respond(
      'refund-1040',
      request.id,
      { approved: false, note: 'changed my mind' },
      { by: 'max' },
    );
    await expect(second).rejects.toMatchObject({ code: 'ALREADY_DECIDED' });
    await expect(runner.respond('refund-1040', request.id, approve, { by: 'max' })).rejects.toThrow(
      /answered by mona/,
    );
    expect(await runner.history('refund-1040')).toEqual(historyBefore);
    expect((await stateOf(checkpoints, 'refund-1040')).outputs).toHaveLength(1);
  });

  it('concurrent answers: exactly one wins and the run continues once', async () => {
    const { runner, checkpoints, request } = await waitingRefund();
    const results = await Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((by) =>
        runner.respond('refund-1040', request.id, { approved: true, note: by }, { by }),
      ),
    );
    const won = results.filter((result) => result.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const lost of results.filter((result) => result.status === 'rejected')) {
      expect(lost.reason).toMatchObject({ code: 'ALREADY_DECIDED' });
    }
    const history = await runner.history('refund-1040');
    expect(history).toHaveLength(3);
    expectLinearChain(history);
    expect((await stateOf(checkpoints, 'refund-1040')).outputs).toHaveLength(1);
  });

  it('two requests of one run answered at once: both answers are consumed, on one chain', async () => {
    const { runner, checkpoints } = harness([reviewWorkflow()]);
    const view = await runner.start('review', 'rv', 'doc');
    const results = await Promise.all(
      view.requests.map((request) => runner.respond('rv', request.id, { ok: true })),
    );
    const final = await stateOf(checkpoints, 'rv');
    expect(final.outputs).toEqual(['approved by legal and finance']);
    expect(final.requests).toEqual([]);
    expect(results.some((result) => result.status === 'completed')).toBe(true);
    expectLinearChain(await runner.history('rv'));
  });

  it('an answer recorded by a process that died before continuing is applied by the next resume', async () => {
    const { runner, checkpoints, request } = await waitingRefund();
    const recorded = await checkpoints.decide(request.id, {
      verdict: 'answered',
      response: approve,
      by: 'mona',
      reason: null,
      at: new Date().toISOString(),
      kind: 'person',
    });
    expect(recorded.won).toBe(true);
    await expect(runner.respond('refund-1040', request.id, approve)).rejects.toMatchObject({
      code: 'ALREADY_DECIDED',
    });
    expect(await runner.resume('refund-1040')).toMatchObject({
      status: 'completed',
      outputs: [expect.stringMatching(/^Refund issued/)],
    });
  });
});

describe('a process that dies between a superstep and its checkpoint', () => {
  it('the next process runs the superstep again from the last checkpoint; the refund is issued once', async () => {
    const { checkpoints, request } = await waitingRefund();
    // This "process" dies right when it would commit the checkpoint after execute ran.
    const dying: CheckpointStore = {
      ...checkpoints,
      saveCheckpoint: async () => {
        throw new Error('killed');
      },
    };
    const first = createWorkflowRunner({ workflows: [refundWorkflow], checkpoints: dying });
    await expect(first.respond('refund-1040', request.id, approve, { by: 'mona' })).rejects.toThrow('killed');
    expect(await checkpoints.getState('bookstore', 'refund:1040')).toMatchObject({ approvedBy: 'mona' });
    expect((await checkpoints.latestCheckpoint('refund-1040'))?.status).toBe('awaiting_input');

    const next = createWorkflowRunner({ workflows: [refundWorkflow], checkpoints });
    const done = await next.resume('refund-1040');
    // Same delivery, same idempotency key: the same answer, and nothing issued twice.
    expect(done.outputs).toEqual([
      'Refund issued: 35.00 for order 1040. Manager note: Approved, photo checked.',
    ]);
    expect(await next.history('refund-1040')).toHaveLength(3);
  });
});

describe('resuming', () => {
  it('rebuilds from the latest checkpoint in a fresh runner and re-emits the pending requests with the same ids', async () => {
    const { checkpoints, view } = await waitingRefund();
    const fresh = createWorkflowRunner({ workflows: [refundWorkflow], checkpoints });
    const resumed = await fresh.resume('refund-1040');
    expect(resumed.requests).toEqual(view.requests);
    expect(resumed.checkpoint).toBe(view.checkpoint);
    expect(await fresh.history('refund-1040')).toHaveLength(2);
  });

  it('resuming an earlier checkpoint forks a branch and leaves that checkpoint as it was; twice gives two branches', async () => {
    const { runner, checkpoints, request } = await waitingRefund();
    const [first] = await runner.history('refund-1040');
    const stored = async () => checkpoints.getCheckpoint('refund-1040', first!.checkpointId);
    const before = await stored();

    const a = await runner.resume('refund-1040', { from: first!.checkpointId });
    const b = await runner.resume('refund-1040', { from: first!.checkpointId });
    expect(await stored()).toEqual(before);
    // prepare ran again on each branch and asked again, with new request ids.
    for (const branch of [a, b]) {
      expect(branch.status).toBe('awaiting_input');
      expect(branch.requests[0]?.data).toEqual(request.data);
      expect(branch.requests[0]?.id).not.toBe(request.id);
    }
    expect(a.requests[0]?.id).not.toBe(b.requests[0]?.id);
    const history = await runner.history('refund-1040');
    expect(history.filter((entry) => entry.parentCheckpointId === first!.checkpointId)).toHaveLength(3);
    const ids = new Set(history.map((entry) => entry.checkpointId));
    for (const entry of history)
      if (entry.parentCheckpointId !== null) expect(ids.has(entry.parentCheckpointId)).toBe(true);

    // The latest branch is the run now: the original request is no longer pending there.
    await expect(runner.respond('refund-1040', request.id, approve)).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    expect((await runner.respond('refund-1040', b.requests[0]!.id, approve)).status).toBe('completed');
  });

  it('resuming a waiting checkpoint that is not the latest gives the branch a checkpoint of its own', async () => {
    const { runner, checkpoints, request } = await waitingRefund();
    await runner.respond('refund-1040', request.id, approve);
    const refund = await checkpoints.getState('bookstore', 'refund:1040');
    const waiting = (await runner.history('refund-1040'))[1]!;
    const branch = await runner.resume('refund-1040', { from: waiting.checkpointId });
    const branchCheckpoint = await checkpoints.latestCheckpoint('refund-1040');
    expect(branchCheckpoint?.parent).toBe(waiting.checkpointId);
    // The answer was given once; the branch continues with it. It is the same delivery from
    // the same checkpoint (same idempotency key), so it reads the same, and issues nothing new.
    expect(branch).toMatchObject({
      status: 'completed',
      outputs: [expect.stringMatching(/^Refund issued: 35\.00/)],
    });
    expect(await checkpoints.getState('bookstore', 'refund:1040')).toEqual(refund);
  });

  it('an unknown checkpoint or run is NOT_FOUND', async () => {
    const { runner } = await waitingRefund();
    await expect(runner.resume('refund-1040', { from: 'cp_nope' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await expect(runner.resume('nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(runner.history('nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
