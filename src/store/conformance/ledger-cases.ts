import { expect } from 'vitest';
import { decodeExecutionCursor, encodeExecutionCursor } from '../execution-page.ts';
import type { ExecutionFilter, ExecutionFinish, ExecutionStart } from '../store.ts';
import { at, atMs, type ConformanceContext, event, leasedSession } from './fixtures.ts';
import { describe, it } from './harness.ts';

function start(requestId: string, session = 's1', seconds = 10): ExecutionStart {
  return {
    requestId,
    session,
    callId: `call-${requestId}`,
    tool: 'place_order',
    args: { isbn: '978-0', quantity: 2 },
    idempotencyKey: `countersign:${requestId}`,
    at: at(seconds),
  };
}

export function ledgerCases(ctx: ConformanceContext): void {
  describe('execution ledger', () => {
    it('starts an execution once; a second start returns the row unchanged', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const first = await store.startExecution(start('r1'), [event('execution.started', 's1', 'r1')]);
      expect(first).toEqual({
        created: true,
        record: {
          requestId: 'r1',
          session: 's1',
          callId: 'call-r1',
          tool: 'place_order',
          args: { isbn: '978-0', quantity: 2 },
          idempotencyKey: 'countersign:r1',
          status: 'started',
          result: null,
          attempts: 1,
          startedAt: at(10),
          finishedAt: null,
        },
      });
      const again = await store.startExecution({ ...start('r1', 's1', 20), args: { other: true } }, [
        event('execution.started', 's1', 'r1'),
      ]);
      expect(again).toEqual({ created: false, record: first.record });
      expect(await store.getExecution('r1')).toEqual(first.record);
      expect((await store.listAudit()).map((entry) => entry.kind)).toEqual(['execution.started']);
    });

    it('finishes a started execution with its result and audit', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await store.startExecution(start('r1'));
      const finished = await store.finishExecution('r1', {
        status: 'succeeded',
        result: { orderId: 'o-1', total: 25.5 },
        at: at(11),
        audit: [event('execution.finished', 's1', 'r1')],
      });
      expect(finished).toMatchObject({
        status: 'succeeded',
        result: { orderId: 'o-1', total: 25.5 },
        finishedAt: at(11),
        startedAt: at(10),
        attempts: 1,
      });
      expect(await store.getExecution('r1')).toEqual(finished);
      expect((await store.listAudit()).map((entry) => [entry.kind, entry.at])).toEqual([
        ['execution.finished', at(11)],
      ]);
    });

    it('a step can carry the ledger result, which commits with it or not at all', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await store.startExecution(start('r1'));
      const finish = {
        requestId: 'r1',
        status: 'succeeded' as const,
        result: 'refunded',
        at: at(11),
        audit: [event('execution.finished', 's1', 'r1')],
      };
      const step = { session: 's1', leaseOwner: 'run-1', append: [], at: at(12), finishes: [finish] };
      await expect(store.commitStep({ ...step, expectedMessageCount: 5 })).rejects.toMatchObject({
        code: 'SESSION_BUSY',
      });
      expect((await store.getExecution('r1'))?.status).toBe('started');
      expect(await store.listAudit()).toEqual([]);
      await store.commitStep({ ...step, expectedMessageCount: 0, audit: [event('call.logged', 's1')] });
      expect(await store.getExecution('r1')).toMatchObject({
        status: 'succeeded',
        result: 'refunded',
        finishedAt: at(11),
      });
      expect((await store.listAudit()).map((entry) => entry.kind)).toEqual([
        'execution.finished',
        'call.logged',
      ]);
      // Already finished: the step is refused whole.
      await expect(store.commitStep({ ...step, expectedMessageCount: 0 })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
      expect((await store.getSession('s1'))?.updatedAt).toBe(at(12));
    });

    it('a step that finishes the same request twice is refused whole', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await store.startExecution(start('r1'));
      const finish = { requestId: 'r1', status: 'succeeded' as const, result: 'refunded', at: at(11) };
      await expect(
        store.commitStep({
          session: 's1',
          leaseOwner: 'run-1',
          expectedMessageCount: 0,
          append: [],
          finishes: [finish, { ...finish, status: 'failed', result: 'declined' }],
          at: at(12),
        }),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(await store.getExecution('r1')).toMatchObject({ status: 'started', result: null });
      expect((await store.getSession('s1'))?.updatedAt).toBe(at(0));
    });

    it('refuses to finish an execution as started, changing nothing', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await store.startExecution(start('r1'));
      // Only a JavaScript caller can get here: the type leaves `started` out.
      const started = { status: 'started', result: null, at: at(11) } as unknown as ExecutionFinish;
      await expect(store.finishExecution('r1', started)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(await store.getExecution('r1')).toMatchObject({ status: 'started', finishedAt: null });
    });

    it('an unknown outcome can be settled later, but a finished one is final', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await store.startExecution(start('r1'));
      const unknown = await store.finishExecution('r1', { status: 'unknown', result: null, at: at(11) });
      expect(unknown.status).toBe('unknown');
      expect(unknown.result).toBeNull();
      const settled = await store.finishExecution('r1', {
        status: 'failed',
        result: 'it did not go through',
        at: at(12),
      });
      expect(settled).toMatchObject({
        status: 'failed',
        result: 'it did not go through',
        finishedAt: at(12),
      });
      await expect(
        store.finishExecution('r1', { status: 'succeeded', result: 'again', at: at(13) }),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect((await store.getExecution('r1'))?.status).toBe('failed');
    });

    it('finishing an execution that never started is NOT_FOUND', async () => {
      await expect(
        ctx.store().finishExecution('nope', { status: 'succeeded', result: null, at: at(1) }),
      ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('starting an execution for an unknown session is NOT_FOUND', async () => {
      await expect(ctx.store().startExecution(start('r1', 'nope'))).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
      expect(await ctx.store().getExecution('r1')).toBeNull();
    });

    it('a fenced start succeeds for the lease holder, at its term’s last instant too', async () => {
      const store = ctx.store();
      // leasedSession: run-1 holds s1 until atMs(1000).
      await leasedSession(store, 's1');
      const fenced = { ...start('r1'), lease: { owner: 'run-1', nowMs: atMs(1000) } };
      const first = await store.startExecution(fenced, [event('execution.started', 's1', 'r1')]);
      expect(first.created).toBe(true);
      expect(first.record).toMatchObject({ requestId: 'r1', status: 'started', startedAt: at(10) });
      expect((await store.getExecution('r1'))?.status).toBe('started');
      expect((await store.listAudit()).map((entry) => entry.kind)).toEqual(['execution.started']);
      // Still the holder: a second start finds the row, as an unfenced one does.
      const again = await store.startExecution({ ...fenced, at: at(20) });
      expect(again).toEqual({ created: false, record: first.record });
    });

    it('a fenced start by a run whose lease was taken over is SESSION_BUSY and writes nothing', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      // Another process judged run-1 dead and took the session over.
      expect(
        await store.acquireLease({
          session: 's1',
          owner: 'run-2',
          untilMs: atMs(2000),
          nowMs: atMs(5),
          takeOverFrom: 'run-1',
        }),
      ).toBe(true);
      const stale = { ...start('r1'), lease: { owner: 'run-1', nowMs: atMs(6) } };
      const refused = store.startExecution(stale, [event('execution.started', 's1', 'r1')]);
      await expect(refused).rejects.toMatchObject({
        code: 'SESSION_BUSY',
        message: expect.stringContaining('r1'),
      });
      expect(await store.getExecution('r1')).toBeNull();
      expect(await store.listExecutions()).toEqual([]);
      expect(await store.listAudit()).toEqual([]);
      expect(await store.getLease('s1')).toEqual({ owner: 'run-2', untilMs: atMs(2000) });
      // The new holder starts it.
      const taken = await store.startExecution({ ...start('r1'), lease: { owner: 'run-2', nowMs: atMs(6) } });
      expect(taken.created).toBe(true);
      // And once the row exists, the old holder is still refused, not handed the row: it
      // must not go on as if the call were its own (an idempotent tool would run again).
      await expect(store.startExecution(stale)).rejects.toMatchObject({ code: 'SESSION_BUSY' });
      expect(await store.getExecution('r1')).toEqual(taken.record);
    });

    it('a fenced start is SESSION_BUSY once the holder’s term ran out, or the lease was released', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const late = { ...start('r1'), lease: { owner: 'run-1', nowMs: atMs(1000) + 1 } };
      await expect(store.startExecution(late)).rejects.toMatchObject({ code: 'SESSION_BUSY' });
      expect(await store.getExecution('r1')).toBeNull();
      await store.releaseLease('s1', 'run-1');
      const released = { ...start('r1'), lease: { owner: 'run-1', nowMs: atMs(6) } };
      await expect(store.startExecution(released)).rejects.toMatchObject({ code: 'SESSION_BUSY' });
      expect(await store.getExecution('r1')).toBeNull();
      // Unfenced, the same start goes through: the fence is the caller's to ask for.
      expect((await store.startExecution(start('r1'))).created).toBe(true);
    });

    it('a fenced start for an unknown session is NOT_FOUND', async () => {
      const store = ctx.store();
      await expect(
        store.startExecution({ ...start('r1', 'nope'), lease: { owner: 'run-1', nowMs: atMs(1) } }),
      ).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect(await store.getExecution('r1')).toBeNull();
    });

    it('lists executions by session and status, oldest first', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await leasedSession(store, 's2');
      await store.startExecution(start('r3', 's1', 30));
      await store.startExecution(start('r1', 's1', 10));
      await store.startExecution(start('r2', 's2', 20));
      await store.finishExecution('r1', { status: 'succeeded', result: 'ok', at: at(31) });
      const ids = async (filter?: Parameters<typeof store.listExecutions>[0]) =>
        (await store.listExecutions(filter)).map((record) => record.requestId);
      expect(await ids()).toEqual(['r1', 'r2', 'r3']);
      expect(await ids({ session: 's1' })).toEqual(['r1', 'r3']);
      expect(await ids({ status: 'started' })).toEqual(['r2', 'r3']);
      expect(await ids({ session: 's1', status: 'succeeded' })).toEqual(['r1']);
      expect(await ids({ status: 'unknown' })).toEqual([]);
    });

    it('pages the ledger by position: after (startedAt, requestId), at most limit', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await store.startExecution(start('r2', 's1', 10));
      await store.startExecution(start('r1', 's1', 10));
      await store.startExecution(start('r3', 's1', 20));
      const ids = async (filter: Parameters<typeof store.listExecutions>[0]) =>
        (await store.listExecutions(filter)).map((record) => record.requestId);
      expect(await ids({ limit: 2 })).toEqual(['r1', 'r2']);
      expect(await ids({ limit: 2, after: { startedAt: at(10), requestId: 'r2' } })).toEqual(['r3']);
      expect(await ids({ after: { startedAt: at(10), requestId: 'r1' }, session: 's1' })).toEqual([
        'r2',
        'r3',
      ]);
      for (const limit of [0, 1.5, 1001])
        await expect(store.listExecutions({ limit })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    });

    it('pages the ledger by a cursor bound to its filters: the same filters page on, other filters are INVALID_CURSOR', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await leasedSession(store, 's2');
      await store.startExecution(start('r1', 's1', 10));
      await store.startExecution(start('r2', 's2', 11));
      await store.startExecution(start('r3', 's1', 12));
      await store.startExecution(start('r4', 's1', 13));
      // As GET /v1/executions and `countersign executions` page: one more than the page.
      const page = async (filter: ExecutionFilter, limit: number, after?: string) => {
        const rows = await store.listExecutions({
          ...filter,
          ...(after === undefined ? {} : { after: decodeExecutionCursor(after, filter) }),
          limit: limit + 1,
        });
        const items = rows.slice(0, limit);
        const last = items[items.length - 1];
        return {
          ids: items.map((record) => record.requestId),
          next: rows.length > limit && last !== undefined ? encodeExecutionCursor(last, filter) : null,
        };
      };
      const first = await page({ session: 's1' }, 1);
      expect(first.ids).toEqual(['r1']);
      const after = first.next ?? '';
      expect(after).not.toBe('');
      // The same filters, any page size: the rest of session s1, not s2's r2.
      expect((await page({ session: 's1' }, 1, after)).ids).toEqual(['r3']);
      expect(await page({ session: 's1' }, 5, after)).toEqual({ ids: ['r3', 'r4'], next: null });
      for (const other of [
        {},
        { session: 's2' },
        { session: 's1', status: 'started' as const },
        { status: 'started' as const },
      ])
        expect(() => decodeExecutionCursor(after, other), JSON.stringify(other)).toThrow(
          expect.objectContaining({
            code: 'INVALID_CURSOR',
            message: expect.stringMatching(
              /other filters.*start again from the first page without a cursor/i,
            ),
          }),
        );
      // The ledger's cursor of the format before filters were bound is refused, saying why.
      const unbound = Buffer.from(JSON.stringify([1, 'ledger', at(10), 'r1'])).toString('base64url');
      expect(() => decodeExecutionCursor(unbound, {})).toThrow(/earlier version/);
    });
  });
}
