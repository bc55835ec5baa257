import { expect } from 'vitest';
import { AUDIT_GENESIS, verifyAuditChain } from '../../core/audit.ts';
import { auditGaps, indexAudit } from '../../core/audit-coverage.ts';
import type { Store } from '../store.ts';
import { at, byPerson, type ConformanceContext, event, leasedSession, raise, request } from './fixtures.ts';
import { describe, it } from './harness.ts';

export function auditCases(ctx: ConformanceContext): void {
  describe('audit trail', () => {
    it('assigns seq from 1 and links every entry to the one before', async () => {
      const store = ctx.store();
      await store.appendAudit(
        [event('request.raised', 's1', 'r1'), event('request.decided', 's1', 'r1')],
        at(1),
      );
      await store.appendAudit([event('tamper.ignored', null)], at(2));
      const entries = await store.listAudit();
      expect(entries.map((entry) => entry.seq)).toEqual([1, 2, 3]);
      expect(entries[0]?.prevHash).toBe(AUDIT_GENESIS);
      expect(entries[1]?.prevHash).toBe(entries[0]?.hash);
      expect(entries[2]?.prevHash).toBe(entries[1]?.hash);
      expect(entries[2]).toMatchObject({ at: at(2), kind: 'tamper.ignored', session: null, requestId: null });
      expect(entries[0]?.data).toEqual({ note: 'request.raised for s1' });
      expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: 3 });
    });

    it('appending nothing adds nothing', async () => {
      await ctx.store().appendAudit([], at(1));
      expect(await ctx.store().listAudit()).toEqual([]);
    });

    it('filters by session in seq order', async () => {
      const store = ctx.store();
      await store.appendAudit([event('request.raised', 's1'), event('request.raised', 's2')], at(1));
      await store.appendAudit([event('request.decided', 's1')], at(2));
      const s1 = await store.listAudit({ session: 's1' });
      expect(s1.map((entry) => [entry.seq, entry.kind])).toEqual([
        [1, 'request.raised'],
        [3, 'request.decided'],
      ]);
    });

    it('one chain runs through every kind of write and verifies', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [],
        approvals: [request({ id: 'r1', session: 's1' })],
        audit: [event('request.raised', 's1', 'r1')],
        at: at(10),
      });
      await store.decide('r1', byPerson('approved', 11), [event('request.decided', 's1', 'r1')]);
      await store.startExecution(
        {
          requestId: 'r1',
          session: 's1',
          callId: 'call-r1',
          tool: 'place_order',
          args: {},
          idempotencyKey: 'k',
          at: at(12),
        },
        [event('execution.started', 's1', 'r1')],
      );
      await store.finishExecution('r1', {
        status: 'succeeded',
        result: 'done',
        at: at(13),
        audit: [event('execution.finished', 's1', 'r1')],
      });
      await raise(store, 's1', [request({ id: 'r2', session: 's1' })]);
      const snapshot = await store.exportSession('s1');
      if (snapshot === null) throw new Error('no snapshot');
      const copy = structuredClone(snapshot);
      copy.session.id = 's2';
      copy.approvals = [];
      copy.executions = [];
      await store.importSession(copy, [event('session.imported', 's2')]);
      const entries = await store.listAudit();
      expect(entries.map((entry) => entry.kind)).toEqual([
        'request.raised',
        'request.decided',
        'execution.started',
        'execution.finished',
        'session.imported',
      ]);
      expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: 5 });
    });

    it('a forged entry does not verify', async () => {
      const store = ctx.store();
      await store.appendAudit([event('request.raised', 's1'), event('request.decided', 's1')], at(1));
      const entries = await store.listAudit();
      const forged = entries.map((entry) => (entry.seq === 1 ? { ...entry, actor: 'mallory' } : entry));
      expect(verifyAuditChain(forged)).toMatchObject({ ok: false, brokenAt: 1 });
      expect(verifyAuditChain(await store.listAudit())).toMatchObject({ ok: true });
    });

    it('every request and ledger row is matched by its audit entries; rows without them are named', async () => {
      const store = ctx.store();
      const gaps = async (target: Store) =>
        auditGaps(
          indexAudit(await target.listAudit()),
          await target.listApprovals(),
          await target.listExecutions(),
        );
      await leasedSession(store, 's1');
      await raise(store, 's1', [request({ id: 'r1', session: 's1' }), request({ id: 'r2', session: 's1' })]);
      await store.appendAudit([event('request.raised', 's1', 'r1')], at(11));
      await store.decide('r1', byPerson('approved', 12), [event('request.decided', 's1', 'r1')]);
      const start = { session: 's1', tool: 'place_order', args: {}, at: at(13) };
      await store.startExecution(
        { ...start, requestId: 'r1', callId: 'call-r1', idempotencyKey: 'countersign:r1' },
        [event('execution.started', 's1', 'r1')],
      );
      await store.finishExecution('r1', {
        status: 'succeeded',
        result: 'ok',
        at: at(14),
        audit: [event('execution.finished', 's1', 'r1')],
      });
      // r2 reaches the same state with every audit entry missing, as after a truncation.
      await store.decide('r2', byPerson('approved', 12));
      await store.startExecution({
        ...start,
        requestId: 'r2',
        callId: 'call-r2',
        idempotencyKey: 'countersign:r2',
      });
      await store.finishExecution('r2', { status: 'failed', result: 'no', at: at(14) });
      expect(await gaps(store)).toEqual([
        { missing: 'request.raised', count: 1, first: ['r2'] },
        { missing: 'request.decided', count: 1, first: ['r2'] },
        { missing: 'execution.started', count: 1, first: ['r2'] },
        { missing: 'execution.finished', count: 1, first: ['r2'] },
      ]);
      await store.appendAudit(
        ['request.raised', 'request.decided', 'execution.started', 'execution.finished'].map((kind) =>
          event(kind as Parameters<typeof event>[0], 's1', 'r2'),
        ),
        at(15),
      );
      expect(await gaps(store)).toEqual([]);
    });
  });
}
