import { expect } from 'vitest';
import type { Decision } from '../../core/approval.ts';
import { isCheckpointStore } from '../checkpoint-store.ts';
import { checkpoint } from './checkpoint-store-conformance.ts';
import {
  answeredBy,
  at,
  atMs,
  byPerson,
  type ConformanceContext,
  event,
  leasedSession,
  portRequest,
  raise,
  request,
} from './fixtures.ts';
import { describe, it } from './harness.ts';

export function approvalCases(ctx: ConformanceContext): void {
  describe('decide', () => {
    async function pending(expiresAt = at(100)) {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const r1 = request({ id: 'r1', session: 's1', expiresAt });
      await raise(store, 's1', [r1]);
      return { store, r1 };
    }

    it('the first decision wins and is stored with its audit events', async () => {
      const { store, r1 } = await pending();
      const decision = byPerson('approved', 20);
      const result = await store.decide('r1', decision, [event('request.decided', 's1', 'r1')]);
      expect(result).toEqual({ won: true, request: { ...r1, status: 'approved', decision }, leased: false });
      expect(await store.getApproval('r1')).toEqual({ ...r1, status: 'approved', decision });
      const audit = await store.listAudit();
      expect(audit.map((entry) => [entry.kind, entry.requestId, entry.at])).toEqual([
        ['request.decided', 'r1', at(20)],
      ]);
    });

    it('keeps who raised a request, through the decision', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const r2 = request({ id: 'r2', session: 's1', raisedBy: 'backend' });
      await raise(store, 's1', [r2]);
      expect((await store.getApproval('r2'))?.raisedBy).toBe('backend');
      const result = await store.decide('r2', byPerson('approved', 20), []);
      expect(result).toMatchObject({ won: true, request: { raisedBy: 'backend' } });
      expect((await store.listApprovals({ session: 's1' })).map((r) => r.raisedBy)).toEqual(['backend']);
    });

    it('takes the free session lease with a winning decision', async () => {
      const { store } = await pending();
      await store.releaseLease('s1', 'run-1');
      const lease = { owner: 'decider', untilMs: atMs(60), nowMs: atMs(20) };
      const result = await store.decide('r1', byPerson('approved', 20), [], { lease });
      expect(result).toMatchObject({ won: true, leased: true });
      expect(await store.getLease('s1')).toEqual({ owner: 'decider', untilMs: atMs(60) });
    });

    it('getApprovalWithSession, where a backend has it, reads what getApproval and getSession do', async () => {
      const { store } = await pending();
      if (store.getApprovalWithSession === undefined) return;
      expect(await store.getApprovalWithSession('r1')).toEqual({
        request: await store.getApproval('r1'),
        session: await store.getSession('s1'),
      });
      expect(await store.getApprovalWithSession('missing')).toBeNull();
    });

    it('getApprovalWithSession read for several requests at once: each caller gets its own', async () => {
      const store = ctx.store();
      if (store.getApprovalWithSession === undefined) return;
      const ids = ['r1', 'r2', 'r3'];
      for (const [i, id] of ids.entries()) {
        await leasedSession(store, `s${i}`);
        await raise(store, `s${i}`, [request({ id, session: `s${i}` })]);
      }
      const found = await Promise.all(
        [...ids, 'missing', 'r1'].map((id) => store.getApprovalWithSession!(id)),
      );
      expect(found.map((f) => [f?.request.id, f?.session?.id])).toEqual([
        ['r1', 's0'],
        ['r2', 's1'],
        ['r3', 's2'],
        [undefined, undefined],
        ['r1', 's0'],
      ]);
      expect(found[3]).toBeNull();
      expect(found[0]).toEqual({
        request: await store.getApproval('r1'),
        session: await store.getSession('s0'),
      });
    });

    it('with loadRun, a decision that takes the lease hands back what the run reads first', async () => {
      const { store } = await pending();
      await store.releaseLease('s1', 'run-1');
      const lease = { owner: 'decider', untilMs: atMs(60), nowMs: atMs(20) };
      const result = await store.decide('r1', byPerson('approved', 20), [], { lease, loadRun: true });
      expect(result).toMatchObject({ won: true, leased: true });
      // Optional for a backend; when given it is exactly what the reads would return.
      if (result.won && result.run !== undefined) {
        expect(result.run.messages).toEqual(await store.loadMessages('s1'));
        expect(result.run.messages.length).toBeGreaterThan(0);
        expect(result.run.execution).toBeNull();
      }
    });

    it('with loadRun, nothing is handed back without the lease or with a lost decision', async () => {
      const { store } = await pending();
      const lease = { owner: 'decider', untilMs: atMs(60), nowMs: atMs(20) };
      const busy = await store.decide('r1', byPerson('approved', 20), [], { lease, loadRun: true });
      expect(busy).toMatchObject({ won: true, leased: false });
      expect('run' in busy ? busy.run : undefined).toBeUndefined();
      await store.releaseLease('s1', 'run-1');
      const lost = await store.decide('r1', byPerson('rejected', 21), [], { lease, loadRun: true });
      expect(lost).toEqual({
        won: false,
        request: expect.objectContaining({ id: 'r1', status: 'approved' }),
      });
    });

    it('a busy lease does not stop the decision; a lost decision takes no lease', async () => {
      const { store } = await pending();
      const lease = { owner: 'decider', untilMs: atMs(60), nowMs: atMs(20) };
      const busy = await store.decide('r1', byPerson('approved', 20), [], { lease });
      expect(busy).toMatchObject({ won: true, leased: false });
      expect((await store.getApproval('r1'))?.status).toBe('approved');
      expect((await store.getLease('s1'))?.owner).toBe('run-1');
      await store.releaseLease('s1', 'run-1');
      const lost = await store.decide('r1', byPerson('rejected', 21), [], { lease });
      expect(lost.won).toBe(false);
      expect(await store.getLease('s1')).toEqual({ owner: null, untilMs: 0 });
    });

    it('a second decision loses, changes nothing and sees the first', async () => {
      const { store } = await pending();
      const first = byPerson('rejected', 20, 'alice');
      await store.decide('r1', first);
      const second = await store.decide('r1', byPerson('approved', 21, 'bob'), [
        event('request.decided', 's1', 'r1'),
      ]);
      expect(second.won).toBe(false);
      expect(second.request?.status).toBe('rejected');
      expect(second.request?.decision).toEqual(first);
      expect(await store.listAudit()).toEqual([]);
    });

    it('of two concurrent decisions exactly one wins', async () => {
      const { store } = await pending();
      const results = await Promise.all([
        store.decide('r1', byPerson('approved', 20, 'alice')),
        store.decide('r1', byPerson('rejected', 20, 'bob')),
      ]);
      expect(results.filter((result) => result.won)).toHaveLength(1);
      const winner = results.find((result) => result.won)?.request?.decision?.by;
      expect((await store.getApproval('r1'))?.decision?.by).toBe(winner);
    });

    it('a person cannot approve or reject once the request expired', async () => {
      const { store } = await pending(at(30));
      const late = await store.decide('r1', byPerson('approved', 31));
      expect(late.won).toBe(false);
      expect(late.request?.status).toBe('pending');
      expect((await store.decide('r1', byPerson('rejected', 31))).won).toBe(false);
      expect((await store.getApproval('r1'))?.status).toBe('pending');
    });

    it('the expiry instant itself is already too late', async () => {
      const { store } = await pending(at(30));
      expect((await store.decide('r1', byPerson('approved', 30))).won).toBe(false);
      expect((await store.decide('r1', byPerson('approved', 29))).won).toBe(true);
    });

    it('an expired request can still be marked expired, or moved on, by the system', async () => {
      const { store } = await pending(at(30));
      const expiry: Decision = {
        verdict: 'expired',
        by: 'countersign',
        reason: null,
        at: at(40),
        kind: 'expiry',
      };
      const result = await store.decide('r1', expiry);
      expect(result.won).toBe(true);
      expect(result.request?.status).toBe('expired');
      expect(result.request?.decision).toEqual(expiry);

      await raise(store, 's1', [request({ id: 'r2', session: 's1', expiresAt: at(30) })]);
      const movedOn: Decision = {
        verdict: 'rejected',
        by: 'countersign',
        reason: 'moved on',
        at: at(40),
        kind: 'moved-on',
      };
      expect((await store.decide('r2', movedOn)).won).toBe(true);
    });

    it('refuses a decision whose time is not in the one UTC form, deciding nothing', async () => {
      // The time is compared as text with the expiry: another form sorts as another time.
      const { store, r1 } = await pending();
      const late = new Date(Date.parse(at(150)) + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
      for (const time of [late, at(20).replace('.000Z', 'Z'), 'soon', '+010000-01-01T00:00:00.000Z']) {
        const refused = await store.decide('r1', { ...byPerson('approved', 20), at: time }).then(
          () => 'decided',
          (error: { code?: string }) => error.code,
        );
        expect(refused, time).toBe('INVALID_INPUT');
      }
      expect(await store.getApproval('r1')).toEqual(r1);
      expect(await store.listAudit()).toEqual([]);
    });

    it('deciding an unknown request loses with no request', async () => {
      expect(await ctx.store().decide('nope', byPerson('approved', 1))).toEqual({
        won: false,
        request: null,
      });
    });

    it('refuses a request whose expiry is unreadable, past the year 9999 or not in the one UTC form, writing nothing', async () => {
      // Stores compare expires_at as text: `+010000-…` would sort before every date.
      const store = ctx.store();
      await leasedSession(store, 's1');
      // An offset or a missing `.sss` reads as a time but sorts as another one.
      for (const expiresAt of [
        '+010000-01-01T00:00:00.000Z',
        'soon',
        '2030-01-01T00:00:00+02:00',
        '2030-01-01T00:00:00Z',
      ]) {
        await expect(
          raise(store, 's1', [request({ id: 'r1', session: 's1', expiresAt })]),
        ).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('expiresAt') });
      }
      expect(await store.getApproval('r1')).toBeNull();
      expect((await store.getSession('s1'))?.messageCount).toBe(0);
    });
  });

  describe('listApprovals', () => {
    it('filters by status, session and tool and lists oldest first, then by id', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await leasedSession(store, 's2');
      const b = request({ id: 'b', session: 's1', createdAt: at(5) });
      const a = request({ id: 'a', session: 's1', createdAt: at(5) });
      const c = request({ id: 'c', session: 's1', createdAt: at(1), tool: 'refund' });
      const d = request({ id: 'd', session: 's2', createdAt: at(3) });
      await raise(store, 's1', [b, a, c]);
      await raise(store, 's2', [d]);
      await store.decide('a', byPerson('approved', 6));
      const ids = async (filter?: Parameters<typeof store.listApprovals>[0]) =>
        (await store.listApprovals(filter)).map((approval) => approval.id);
      expect(await ids()).toEqual(['c', 'd', 'a', 'b']);
      expect(await ids({ status: 'pending' })).toEqual(['c', 'd', 'b']);
      expect(await ids({ status: 'approved' })).toEqual(['a']);
      expect(await ids({ session: 's1' })).toEqual(['c', 'a', 'b']);
      expect(await ids({ tool: 'refund' })).toEqual(['c']);
      expect(await ids({ session: 's2', status: 'pending', tool: 'place_order' })).toEqual(['d']);
      expect(await ids({ status: 'expired' })).toEqual([]);
    });
  });

  describe('the due-query and the fields of the one request model', () => {
    it('lists pending requests due at an instant, soonest expiry first, up to a limit, by kind', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await raise(store, 's1', [
        request({ id: 'late', session: 's1', expiresAt: at(300) }),
        request({ id: 'soon', session: 's1', expiresAt: at(50) }),
        request({ id: 'gone', session: 's1', expiresAt: at(40) }),
      ]);
      await store.decide('gone', byPerson('approved', 20));
      const ids = async (query: Parameters<typeof store.listDue>[0]) =>
        (await store.listDue(query)).map((row) => row.id);
      expect(await ids({ at: at(49), limit: 10 })).toEqual([]);
      expect(await ids({ at: at(50), limit: 10 })).toEqual(['soon']);
      expect(await ids({ at: at(400), limit: 10 })).toEqual(['soon', 'late']);
      expect(await ids({ at: at(400), limit: 1 })).toEqual(['soon']);
      expect(await ids({ at: at(400), limit: 10, kind: 'port' })).toEqual([]);
      expect(await ids({ at: at(400), limit: 10, kind: 'tool-call' })).toEqual(['soon', 'late']);
    });

    it('keeps kind, run, customer and required role, and filters by kind and run', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const inRun = request({
        id: 'in-run',
        session: 's1',
        run: 'r-7',
        customer: 'c-100',
        requiredRole: 'manager',
      });
      await raise(store, 's1', [inRun, request({ id: 'plain', session: 's1' })]);
      expect(await store.getApproval('in-run')).toEqual(inRun);
      expect((await store.listApprovals({ run: 'r-7' })).map((row) => row.id)).toEqual(['in-run']);
      expect((await store.listApprovals({ kind: 'tool-call' })).map((row) => row.id).sort()).toEqual([
        'in-run',
        'plain',
      ]);
      expect(await store.listApprovals({ kind: 'port' })).toEqual([]);
    });
  });

  // Port requests are rows of the same table where the store also keeps workflow runs.
  describe('port requests (stores that keep workflow runs)', () => {
    const checkpointsOf = (store: unknown) => (isCheckpointStore(store) ? store : null);
    const raised = async () => {
      const store = checkpointsOf(ctx.store());
      if (store === null) return null;
      const saved = await store.saveCheckpoint(checkpoint('r', 0), null, {
        requests: [portRequest('r', 'p1')],
      });
      expect(saved.saved).toBe(true);
      return store;
    };

    it('is inserted with the checkpoint that raises it, beside the tool calls', async () => {
      const store = await raised();
      if (store === null) return;
      expect(await store.getApproval('p1')).toEqual(portRequest('r', 'p1'));
      expect((await store.listApprovals({ kind: 'port', status: 'pending' })).map((row) => row.id)).toEqual([
        'p1',
      ]);
      expect((await store.listDue({ at: at(100), limit: 5 })).map((row) => row.id)).toEqual(['p1']);
    });

    it('is answered once; the loser sees the winner', async () => {
      const store = await raised();
      if (store === null) return;
      const [first, second] = await Promise.all([
        store.decide('p1', answeredBy('alice', 20, { approved: true, note: 'a' })),
        store.decide('p1', answeredBy('bob', 20, { approved: false, note: 'b' })),
      ]);
      const winner = first.won ? first : second;
      const loser = first.won ? second : first;
      expect(winner.won).toBe(true);
      expect(loser).toEqual({ won: false, request: winner.request });
      expect((await store.getApproval('p1'))?.decision?.response).toEqual(winner.request?.decision?.response);
    });

    it("refuses a person's answer at or past the expiry, and takes the expiry", async () => {
      const store = await raised();
      if (store === null) return;
      expect(await store.decide('p1', answeredBy('alice', 100))).toMatchObject({
        won: false,
        request: { status: 'pending' },
      });
      const expiry: Decision = {
        verdict: 'expired',
        by: 'countersign',
        reason: 'x',
        at: at(100),
        kind: 'expiry',
      };
      expect((await store.decide('p1', expiry)).won).toBe(true);
      expect(await store.listDue({ at: at(200), limit: 5 })).toEqual([]);
    });
  });

  describe('recordApproval (a quorum filling up)', () => {
    async function quorum(expiresAt = at(100)) {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const r1 = request({ id: 'r1', session: 's1', expiresAt, approvalsNeeded: 2, requiredRole: 'manager' });
      await raise(store, 's1', [r1]);
      return { store, r1 };
    }
    const meg = { by: 'meg', at: at(20), reason: null };
    const update = (revision: number, approvals = [meg], seconds = 20) => ({
      revision,
      at: at(seconds),
      approvals,
      edit: null,
      requiredRole: 'manager',
      approvalsNeeded: 2,
    });

    it('a raised request starts with no approvals at revision 0, its quorum size and editable fields kept', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await raise(store, 's1', [
        request({ id: 'r1', session: 's1', approvalsNeeded: 3, editable: ['quantity'] }),
      ]);
      expect(await store.getApproval('r1')).toMatchObject({
        approvalsNeeded: 3,
        editable: ['quantity'],
        approvals: [],
        edit: null,
        revision: 0,
      });
    });

    it('refuses an approval whose time is not in the one UTC form, recording nothing', async () => {
      const { store, r1 } = await quorum();
      const refused = await store
        .recordApproval('r1', { ...update(0), at: at(20).replace('.000Z', 'Z') })
        .then(
          () => 'recorded',
          (error: { code?: string }) => error.code,
        );
      expect(refused).toBe('INVALID_INPUT');
      expect(await store.getApproval('r1')).toEqual(r1);
    });

    it('records an approval at the revision read, bumps it, and commits its audit events with it', async () => {
      const { store, r1 } = await quorum();
      const result = await store.recordApproval('r1', update(0), [
        event('request.approval-added', 's1', 'r1'),
      ]);
      expect(result).toEqual({ won: true, request: { ...r1, approvals: [meg], revision: 1 } });
      expect(await store.getApproval('r1')).toEqual({ ...r1, approvals: [meg], revision: 1 });
      expect((await store.listAudit()).map((entry) => [entry.kind, entry.at])).toEqual([
        ['request.approval-added', at(20)],
      ]);
      // The final approval goes through decide, which keeps the quorum state beside the decision.
      const decision = {
        ...byPerson('approved', 30, 'max'),
        approvals: [meg, { by: 'max', at: at(30), reason: null }],
      };
      const decided = await store.decide('r1', decision);
      expect(decided).toMatchObject({ won: true, request: { status: 'approved', decision, revision: 1 } });
    });

    it('keeps an edited call and a re-routing (role, quorum size) written with an approval', async () => {
      const { store } = await quorum();
      const edit = {
        args: { isbn: '978-0', quantity: 1, note: 'gift wrap' },
        argsJson: '{"isbn":"978-0","note":"gift wrap","quantity":1}',
        argsHash: 'ab'.repeat(32),
        effect: 'Orders 1 copy.',
        effectHash: 'cd'.repeat(32),
        diff: [{ field: 'quantity', from: 2, to: 1 }],
        by: 'sam',
        at: at(20),
      };
      const result = await store.recordApproval('r1', {
        ...update(0, []),
        edit,
        requiredRole: 'director',
        approvalsNeeded: 1,
      });
      expect(result).toMatchObject({
        won: true,
        request: { edit, requiredRole: 'director', approvalsNeeded: 1 },
      });
      expect(await store.getApproval('r1')).toMatchObject({
        edit,
        requiredRole: 'director',
        approvals: [],
        revision: 1,
      });
    });

    it('a stale revision loses, writes nothing and sees the row as it is', async () => {
      const { store } = await quorum();
      await store.recordApproval('r1', update(0));
      const stale = await store.recordApproval(
        'r1',
        update(0, [{ by: 'max', at: at(21), reason: null }], 21),
        [event('request.approval-added', 's1', 'r1')],
      );
      expect(stale).toMatchObject({ won: false, request: { approvals: [meg], revision: 1 } });
      expect(await store.listAudit()).toEqual([]);
    });

    it('two approvers racing for the same slot: exactly one is recorded', async () => {
      const { store } = await quorum();
      const results = await Promise.all(
        ['max', 'moe', 'mia'].map((by) =>
          store.recordApproval('r1', update(0, [{ by, at: at(20), reason: null }])),
        ),
      );
      expect(results.filter((result) => result.won)).toHaveLength(1);
      const winner = results.find((result) => result.won)?.request?.approvals[0]?.by;
      expect((await store.getApproval('r1'))?.approvals.map((a) => a.by)).toEqual([winner]);
    });

    it('racing for the last slot after it: decide lets exactly one complete the quorum', async () => {
      const { store } = await quorum();
      await store.recordApproval('r1', update(0));
      const results = await Promise.all(
        ['max', 'moe'].map((by) => store.decide('r1', { ...byPerson('approved', 30, by), approvals: [meg] })),
      );
      expect(results.filter((result) => result.won)).toHaveLength(1);
    });

    it('refuses a decided, an expired or an unknown request', async () => {
      const { store } = await quorum(at(30));
      expect(await store.recordApproval('r1', update(0, [meg], 30))).toMatchObject({
        won: false,
        request: { status: 'pending', revision: 0 },
      });
      expect(await store.recordApproval('nope', update(0))).toEqual({ won: false, request: null });
      await store.decide('r1', byPerson('rejected', 25, 'max'));
      expect(await store.recordApproval('r1', update(0, [meg], 26))).toMatchObject({
        won: false,
        request: { status: 'rejected' },
      });
    });

    it('refuses an update that is no partial approval (the same approver twice, a full quorum), writing nothing', async () => {
      const { store } = await quorum();
      const twice = update(0, [meg, { ...meg, by: 'MEG' }]);
      await expect(store.recordApproval('r1', { ...twice, approvalsNeeded: 3 })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
      await expect(
        store.recordApproval('r1', update(0, [meg, { by: 'max', at: at(20), reason: null }])),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect((await store.getApproval('r1'))?.revision).toBe(0);
    });
  });
}
