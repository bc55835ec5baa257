import { expect } from 'vitest';
import type { OpenBatch } from '../../core/session.ts';
import type { StalledSessionQuery, Store } from '../store.ts';
import {
  assistantCalling,
  at,
  atMs,
  byPerson,
  type ConformanceContext,
  leasedSession,
  request,
} from './fixtures.ts';
import { describe, it } from './harness.ts';

/** Long after every fixture timestamp: no lease taken below has lapsed unless a case says so. */
const now = atMs(500);

/**
 * A session as a run leaves it when it stops for approvals: an open batch holding one call
 * per request, the requests pending, the lease released with the step at `seconds`.
 */
async function waiting(
  store: Store,
  session: string,
  options: { requests?: string[]; seconds?: number; agent?: string } = {},
): Promise<string[]> {
  const ids = options.requests ?? [`${session}-r1`];
  if (options.agent === undefined) await leasedSession(store, session);
  else {
    await store.ensureSession({ id: session, agent: options.agent, principal: null, at: at(0) });
    await store.acquireLease({ session, owner: 'run-1', untilMs: atMs(1000), nowMs: atMs(0) });
  }
  const approvals = ids.map((id) => request({ id, session }));
  const batch: OpenBatch = {
    messageSeq: 0,
    calls: approvals.map((approval) => ({
      callId: approval.callId,
      tool: approval.tool,
      args: approval.args,
      disposition: { kind: 'approval', approvalId: approval.id },
    })),
  };
  await store.commitStep({
    session,
    leaseOwner: 'run-1',
    expectedMessageCount: 0,
    append: [assistantCalling(approvals[0]!.callId, 'place_order', approvals[0]!.args)],
    batch,
    approvals,
    releaseLease: true,
    at: at(options.seconds ?? 10),
  });
  return ids;
}

/** Decides every request, as a process that then died before continuing would have. */
async function decideAll(store: Store, ids: string[]): Promise<void> {
  for (const id of ids) {
    const outcome = await store.decide(id, byPerson('approved', 20));
    if (!outcome.won) throw new Error(`test setup could not decide ${id}`);
  }
}

async function stalledIds(store: Store, query: Partial<StalledSessionQuery> = {}) {
  return (await store.listStalledSessions({ nowMs: now, ...query })).map((session) => session.id);
}

export function stalledCases(ctx: ConformanceContext): void {
  describe('stalled sessions', () => {
    it('lists a session whose open batch is fully decided and whose lease is free', async () => {
      const store = ctx.store();
      await decideAll(store, await waiting(store, 's1', { agent: 'kitchen', seconds: 12 }));
      expect(await store.listStalledSessions({ nowMs: now })).toEqual([
        { id: 's1', agent: 'kitchen', updatedAt: at(12), lease: { owner: null, untilMs: 0 } },
      ]);
    });

    it('does not list a session without an open batch', async () => {
      const store = ctx.store();
      await leasedSession(store, 'fresh');
      await store.releaseLease('fresh', 'run-1');
      await decideAll(store, await waiting(store, 'settled'));
      // The continuing run settles the batch and clears it in its step.
      await store.acquireLease({ session: 'settled', owner: 'run-2', untilMs: atMs(1000), nowMs: atMs(30) });
      await store.commitStep({
        session: 'settled',
        leaseOwner: 'run-2',
        expectedMessageCount: 1,
        append: [
          { role: 'tool', results: [{ callId: 'call-settled-r1', tool: 'place_order', output: 'done' }] },
        ],
        batch: null,
        releaseLease: true,
        at: at(30),
      });
      expect(await stalledIds(store)).toEqual([]);
    });

    it('does not list a session while any request of its batch is pending', async () => {
      const store = ctx.store();
      const [first, second] = await waiting(store, 's1', { requests: ['r1', 'r2'] });
      expect(await stalledIds(store)).toEqual([]);
      await decideAll(store, [first!]);
      expect(await stalledIds(store)).toEqual([]);
      // A rejection decides a request as well as an approval does.
      await store.decide(second!, byPerson('rejected', 21));
      expect(await stalledIds(store)).toEqual(['s1']);
    });

    it('follows a session through a second batch: a new pending request hides it, its decision shows it again', async () => {
      const store = ctx.store();
      await decideAll(store, await waiting(store, 's1'));
      expect(await stalledIds(store)).toEqual(['s1']);
      // The continuing run settles the first batch and stops at a new request in one step.
      await store.acquireLease({ session: 's1', owner: 'run-2', untilMs: atMs(1000), nowMs: atMs(30) });
      const next = request({ id: 's1-r2', session: 's1' });
      await store.commitStep({
        session: 's1',
        leaseOwner: 'run-2',
        expectedMessageCount: 1,
        append: [
          { role: 'tool', results: [{ callId: 'call-s1-r1', tool: 'place_order', output: 'done' }] },
          assistantCalling(next.callId, 'place_order', next.args),
        ],
        batch: {
          messageSeq: 2,
          calls: [
            {
              callId: next.callId,
              tool: next.tool,
              args: next.args,
              disposition: { kind: 'approval', approvalId: next.id },
            },
          ],
        },
        approvals: [next],
        releaseLease: true,
        at: at(30),
      });
      expect(await stalledIds(store)).toEqual([]);
      await decideAll(store, [next.id]);
      expect(await stalledIds(store)).toEqual(['s1']);
    });

    it('lists an imported session whose open batch was decided before the export', async () => {
      const store = ctx.store();
      await decideAll(store, await waiting(store, 's1'));
      const snapshot = await store.exportSession('s1');
      if (snapshot === null) throw new Error('test setup: s1 did not export');
      const { store: target, cleanup } = await ctx.fresh();
      try {
        await target.importSession(snapshot);
        expect(await stalledIds(target)).toEqual(['s1']);
      } finally {
        await cleanup();
      }
    });

    it('counts expired requests as decided', async () => {
      const store = ctx.store();
      const [id] = await waiting(store, 's1');
      await store.decide(id!, {
        verdict: 'expired',
        by: 'countersign',
        reason: 'expired',
        at: at(200),
        kind: 'expiry',
      });
      expect(await stalledIds(store)).toEqual(['s1']);
    });

    it('does not list a session whose lease is held, and lists it once the lease lapses', async () => {
      const store = ctx.store();
      const ids = await waiting(store, 's1');
      // Inline mode: the decision takes the lease in its own transaction, then the process dies.
      const outcome = await store.decide(ids[0]!, byPerson('approved', 20), [], {
        lease: { owner: 'dead-run', untilMs: atMs(520), nowMs: atMs(20) },
      });
      expect(outcome).toMatchObject({ won: true, leased: true });
      expect(await stalledIds(store, { nowMs: atMs(510) })).toEqual([]);
      // Still held at the instant its term ends, as acquireLease sees it.
      expect(await stalledIds(store, { nowMs: atMs(520) })).toEqual([]);
      expect(await store.listStalledSessions({ nowMs: atMs(521) })).toEqual([
        { id: 's1', agent: 'bookstore', updatedAt: at(10), lease: { owner: 'dead-run', untilMs: atMs(520) } },
      ]);
    });

    it('with includeHeld, also lists held sessions with their holder, for the caller to judge', async () => {
      const store = ctx.store();
      await decideAll(store, await waiting(store, 'free', { seconds: 11 }));
      await decideAll(store, await waiting(store, 'held', { seconds: 12 }));
      await store.acquireLease({
        session: 'held',
        owner: 'host:123:abc',
        untilMs: atMs(900),
        nowMs: atMs(30),
      });
      await waiting(store, 'pending', { seconds: 13 });
      expect(await stalledIds(store)).toEqual(['free']);
      expect(await store.listStalledSessions({ nowMs: now, includeHeld: true })).toEqual([
        { id: 'free', agent: 'bookstore', updatedAt: at(11), lease: { owner: null, untilMs: 0 } },
        {
          id: 'held',
          agent: 'bookstore',
          updatedAt: at(12),
          lease: { owner: 'host:123:abc', untilMs: atMs(900) },
        },
      ]);
    });

    it('does not list a session with a ledger row of unknown outcome until it is reconciled', async () => {
      const store = ctx.store();
      const ids = await waiting(store, 's1', { requests: ['r1', 'r2'] });
      await decideAll(store, ids);
      const start = { session: 's1', tool: 'place_order', args: {}, at: at(30) };
      await store.startExecution({ ...start, requestId: 'r1', callId: 'call-r1', idempotencyKey: 'k1' });
      await store.startExecution({ ...start, requestId: 'r2', callId: 'call-r2', idempotencyKey: 'k2' });
      // `started` is what a run that died mid-call leaves: resuming it is what marks it unknown.
      expect(await stalledIds(store)).toEqual(['s1']);
      await store.finishExecution('r1', { status: 'unknown', result: null, at: at(31) });
      expect(await stalledIds(store)).toEqual([]);
      await store.finishExecution('r1', { status: 'succeeded', result: 'checked', at: at(40) });
      expect(await stalledIds(store)).toEqual(['s1']);
    });

    it('orders by updatedAt, then by id in code-point order, and applies the limit', async () => {
      const store = ctx.store();
      const sessions: Array<[string, number]> = [
        ['b', 12],
        ['a', 12],
        ['B', 12],
        ['z', 11],
        ['c', 13],
      ];
      for (const [id, seconds] of sessions) await decideAll(store, await waiting(store, id, { seconds }));
      expect(await stalledIds(store)).toEqual(['z', 'B', 'a', 'b', 'c']);
      expect(await stalledIds(store, { limit: 2 })).toEqual(['z', 'B']);
      expect(await stalledIds(store, { limit: 1 })).toEqual(['z']);
    });

    it("lists only the named agents' sessions, before the limit applies", async () => {
      const store = ctx.store();
      await decideAll(store, await waiting(store, 'other-1', { agent: 'other', seconds: 11 }));
      await decideAll(store, await waiting(store, 'other-2', { agent: 'other', seconds: 12 }));
      await decideAll(store, await waiting(store, 'mine', { agent: 'kitchen', seconds: 13 }));
      await decideAll(store, await waiting(store, 'also-mine', { agent: 'bookstore', seconds: 14 }));
      const query = { nowMs: now, limit: 1 };
      expect(await stalledIds(store, query)).toEqual(['other-1']);
      expect(await store.listStalledSessions({ ...query, agents: ['kitchen', 'bookstore'] })).toMatchObject([
        { id: 'mine', agent: 'kitchen' },
      ]);
      expect(await stalledIds(store, { agents: ['bookstore', 'kitchen'] })).toEqual(['mine', 'also-mine']);
      expect(await store.listStalledSessions({ nowMs: now, agents: [] })).toEqual([]);
    });

    it('refuses a limit that is not a whole number of at least one', async () => {
      const store = ctx.store();
      for (const limit of [0, -1, 1.5])
        await expect(store.listStalledSessions({ nowMs: now, limit })).rejects.toMatchObject({
          code: 'INVALID_INPUT',
        });
    });
  });
}
