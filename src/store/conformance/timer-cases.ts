import { expect } from 'vitest';
import type { RequestNudges } from '../../core/approval.ts';
import { markSent } from '../../core/nudges.ts';
import type { Store } from '../store.ts';
import { at, byPerson, type ConformanceContext, event, leasedSession, raise, request } from './fixtures.ts';
import { describe, it } from './harness.ts';

/** A reminder at 30 s, an escalation to managers at 50 s and a warning at 80 s (expiry at 100 s). */
export function nudgePlan(overrides: Partial<RequestNudges> = {}): RequestNudges {
  return {
    remindAt: at(30),
    remindedAt: null,
    escalateAt: at(50),
    escalateTo: 'manager',
    escalatedAt: null,
    expiringAt: at(80),
    expiringSentAt: null,
    ...overrides,
  };
}

export function timerCases(ctx: ConformanceContext): void {
  async function waiting(store: Store, ids: Array<[string, RequestNudges | null]>) {
    await leasedSession(store, 's1');
    const rows = ids.map(([id, nudges]) => request({ id, session: 's1', nudges }));
    await raise(store, 's1', rows);
    return rows;
  }
  const ids = (rows: Array<{ id: string }>) => rows.map((row) => row.id);

  describe('nudges', () => {
    it('keeps the nudges, no claim and no escalation on a raised request', async () => {
      const store = ctx.store();
      const [r1] = await waiting(store, [['r1', nudgePlan()]]);
      expect(await store.getApproval('r1')).toEqual(r1);
      expect(r1).toMatchObject({ claim: null, escalatedTo: null, nudges: nudgePlan() });
    });

    it('lists pending requests whose next nudge is due, soonest first, by kind and limit', async () => {
      const store = ctx.store();
      await waiting(store, [
        ['late', nudgePlan({ remindAt: at(40) })],
        ['early', nudgePlan({ remindAt: at(20) })],
        ['none', null],
        ['decided', nudgePlan({ remindAt: at(10) })],
        [
          'only-warning',
          nudgePlan({ remindAt: null, escalateAt: null, escalateTo: null, expiringAt: at(35) }),
        ],
      ]);
      expect((await store.decide('decided', byPerson('approved', 15), [])).won).toBe(true);
      expect(ids(await store.listNudgesDue({ at: at(19), limit: 10 }))).toEqual([]);
      expect(ids(await store.listNudgesDue({ at: at(40), limit: 10 }))).toEqual([
        'early',
        'only-warning',
        'late',
      ]);
      expect(ids(await store.listNudgesDue({ at: at(40), limit: 1 }))).toEqual(['early']);
      expect(await store.listNudgesDue({ at: at(40), limit: 10, kind: 'port' })).toEqual([]);
      expect(ids(await store.listNudgesDue({ at: at(40), limit: 10, kind: 'tool-call' }))).toHaveLength(3);
    });

    it('dueWork, where a store has it, never says a sweep has nothing when its query finds something', async () => {
      const store = ctx.store();
      await waiting(store, [
        ['r1', nudgePlan()],
        ['r2', null],
      ]);
      // What the watcher's three queries find at `second`, beside what dueWork answers.
      const check = async (second: number, expected: { expiry: boolean; nudges: boolean }) => {
        const iso = at(second);
        const found = {
          expiry: (await store.listDue({ at: iso, limit: 1 })).length > 0,
          nudges: (await store.listNudgesDue({ at: iso, limit: 1 })).length > 0,
          stalled:
            (await store.listStalledSessions({ nowMs: Date.parse(iso), limit: 1, includeHeld: true }))
              .length > 0,
        };
        expect({ expiry: found.expiry, nudges: found.nudges }).toEqual(expected);
        const said = await store.dueWork?.(iso);
        if (said === undefined) return;
        expect({ expiry: said.expiry, nudges: said.nudges }).toEqual(expected);
        // The stalled flag may be wider than the listing (leases, agents, unknown calls), never narrower.
        if (found.stalled) expect(said.stalled).toBe(true);
      };
      await check(20, { expiry: false, nudges: false });
      await check(35, { expiry: false, nudges: true });
      await check(100, { expiry: true, nudges: true });
      // Decided, both: nothing pending is due, and the session is left to be continued.
      expect((await store.decide('r1', byPerson('approved', 40), [])).won).toBe(true);
      expect((await store.decide('r2', byPerson('rejected', 40), [])).won).toBe(true);
      await check(100, { expiry: false, nudges: false });
    });

    it("dueWork's next is the soonest stored expiry or nudge of a pending request, null when none waits", async () => {
      const store = ctx.store();
      if (store.dueWork === undefined) return;
      expect((await store.dueWork(at(20))).next).toBe(null);
      // No nudges: the expiry is the next thing due.
      await waiting(store, [['r2', null]]);
      expect(await store.dueWork(at(20))).toEqual({
        expiry: false,
        nudges: false,
        stalled: false,
        next: at(100),
      });
      // A reminder at 30 s comes before it; a later expiry does not move it.
      await raise(store, 's1', [
        request({ id: 'r1', session: 's1', nudges: nudgePlan() }),
        request({ id: 'r3', session: 's1', expiresAt: at(500) }),
      ]);
      expect((await store.dueWork(at(20))).next).toBe(at(30));
      // Due now: the flag says so, and next is the moment that is past.
      expect(await store.dueWork(at(31))).toMatchObject({ nudges: true, expiry: false, next: at(30) });
      // Decided requests are not waiting: only r3's expiry is left.
      for (const id of ['r1', 'r2'])
        expect((await store.decide(id, byPerson('rejected', 40), [])).won).toBe(true);
      expect((await store.dueWork(at(41))).next).toBe(at(500));
    });

    it('fires a nudge once: the compare-and-set advances the next nudge and commits its audit entry', async () => {
      const store = ctx.store();
      await waiting(store, [['r1', nudgePlan()]]);
      const from = nudgePlan();
      const to = markSent(from, 'reminder', at(31));
      const won = await store.advanceNudge('r1', { at: at(31), from, to }, [
        event('request.reminder', 's1', 'r1'),
      ]);
      expect(won).toMatchObject({ id: 'r1', nudges: to, escalatedTo: null });
      // The same nudge again (a second sweep that read the row before): nothing changes.
      expect(
        await store.advanceNudge('r1', { at: at(32), from, to }, [event('request.reminder', 's1', 'r1')]),
      ).toBe(null);
      expect((await store.listAudit()).filter((entry) => entry.kind === 'request.reminder')).toHaveLength(1);
      expect(ids(await store.listNudgesDue({ at: at(40), limit: 10 }))).toEqual([]);
      expect(ids(await store.listNudgesDue({ at: at(50), limit: 10 }))).toEqual(['r1']);
      const escalated = markSent(to, 'escalated', at(51));
      expect(
        await store.advanceNudge('r1', { at: at(51), from: to, to: escalated, escalatedTo: 'manager' }, [
          event('request.escalated', 's1', 'r1'),
        ]),
      ).toMatchObject({ nudges: escalated, escalatedTo: 'manager' });
      expect(await store.getApproval('r1')).toMatchObject({ nudges: escalated, escalatedTo: 'manager' });
      const warned = markSent(escalated, 'expiring', at(81));
      expect(await store.advanceNudge('r1', { at: at(81), from: escalated, to: warned })).toMatchObject({
        nudges: warned,
        escalatedTo: 'manager',
      });
      // Nothing left to fire: the row leaves the due-query.
      expect(await store.listNudgesDue({ at: at(99), limit: 10 })).toEqual([]);
      expect(await store.advanceNudge('r1', { at: at(90), from: warned, to: warned })).toBe(null);
    });

    it('fires nothing on a decided request, and the decision keeps its nudges as they were', async () => {
      const store = ctx.store();
      await waiting(store, [['r1', nudgePlan()]]);
      expect((await store.decide('r1', byPerson('rejected', 20), [])).won).toBe(true);
      const from = nudgePlan();
      expect(
        await store.advanceNudge('r1', { at: at(31), from, to: markSent(from, 'reminder', at(31)) }),
      ).toBe(null);
      expect(await store.getApproval('r1')).toMatchObject({ status: 'rejected', nudges: from });
      expect(await store.advanceNudge('missing', { at: at(31), from, to: from })).toBe(null);
    });

    it('two processes firing the same nudge at once: one wins, one audit entry', async () => {
      const store = ctx.store();
      const other = await ctx.sibling();
      await waiting(store, [['r1', nudgePlan()]]);
      const from = nudgePlan();
      const fire = (on: Store, second: number) =>
        on.advanceNudge('r1', { at: at(second), from, to: markSent(from, 'reminder', at(second)) }, [
          event('request.reminder', 's1', 'r1'),
        ]);
      const results = await Promise.all([fire(store, 31), fire(other, 32), fire(store, 33), fire(other, 34)]);
      expect(results.filter((row) => row !== null)).toHaveLength(1);
      expect((await store.listAudit()).filter((entry) => entry.kind === 'request.reminder')).toHaveLength(1);
    });
  });

  describe('claims', () => {
    const take = (store: Store, by: string, second: number, until: number) =>
      store.changeClaim('r1', { by, at: at(second), claim: { by, until: at(until) } }, [
        event('request.claimed', 's1', 'r1'),
      ]);
    const give = (store: Store, by: string, second: number) =>
      store.changeClaim('r1', { by, at: at(second), claim: null }, [event('request.released', 's1', 'r1')]);

    it('one approver holds a request until it lapses; they may renew and release it', async () => {
      const store = ctx.store();
      await waiting(store, [['r1', null]]);
      expect(await take(store, 'alice', 20, 40)).toMatchObject({
        won: true,
        request: { claim: { by: 'alice', until: at(40) } },
      });
      // Someone else meets alice's claim, and nothing is written.
      expect(await take(store, 'bob', 25, 45)).toMatchObject({
        won: false,
        request: { claim: { by: 'alice', until: at(40) } },
      });
      expect(await give(store, 'bob', 26)).toMatchObject({ won: false, request: { claim: { by: 'alice' } } });
      expect(await take(store, 'alice', 30, 55)).toMatchObject({
        won: true,
        request: { claim: { until: at(55) } },
      });
      // Lapsed at 55: bob takes it.
      expect(await take(store, 'bob', 55, 70)).toMatchObject({
        won: true,
        request: { claim: { by: 'bob' } },
      });
      expect(await give(store, 'bob', 60)).toMatchObject({ won: true, request: { claim: null } });
      expect(await give(store, 'bob', 61)).toMatchObject({ won: false, request: { claim: null } });
      const kinds = (await store.listAudit()).map((entry) => entry.kind);
      expect(kinds).toEqual(['request.claimed', 'request.claimed', 'request.claimed', 'request.released']);
    });

    it('claims nothing decided, expired or missing', async () => {
      const store = ctx.store();
      await waiting(store, [['r1', null]]);
      expect(await take(store, 'alice', 100, 120)).toMatchObject({ won: false, request: { claim: null } });
      expect((await store.decide('r1', byPerson('approved', 20), [])).won).toBe(true);
      expect(await take(store, 'alice', 21, 40)).toMatchObject({
        won: false,
        request: { status: 'approved' },
      });
      expect(
        await store.changeClaim('missing', { by: 'a', at: at(1), claim: { by: 'a', until: at(9) } }),
      ).toEqual({
        won: false,
        request: null,
      });
      expect(await store.listAudit()).toEqual([]);
    });

    it('a claim never stops a decision, and the decided row keeps who held it', async () => {
      const store = ctx.store();
      await waiting(store, [['r1', null]]);
      await take(store, 'alice', 20, 60);
      const result = await store.decide('r1', byPerson('approved', 30, 'bob'), []);
      expect(result).toMatchObject({
        won: true,
        request: { claim: { by: 'alice' }, decision: { by: 'bob' } },
      });
    });

    it('two approvers claiming at once from two processes: one holds it', async () => {
      const store = ctx.store();
      const other = await ctx.sibling();
      await waiting(store, [['r1', null]]);
      const results = await Promise.all([
        take(store, 'alice', 20, 60),
        take(other, 'bob', 20, 60),
        take(store, 'carol', 20, 60),
        take(other, 'dan', 20, 60),
      ]);
      expect(results.filter((result) => result.won)).toHaveLength(1);
      expect((await store.listAudit()).filter((entry) => entry.kind === 'request.claimed')).toHaveLength(1);
    });
  });
}
