import { expect } from 'vitest';
import type { Store } from '../store.ts';
import {
  at,
  byPerson,
  type ConformanceContext,
  event,
  leasedSession,
  raise,
  request,
  user,
} from './fixtures.ts';
import { describe, it } from './harness.ts';

/** A session with every kind of row: messages, a batch, decided and pending requests, a ledger row. */
async function fullSession(store: Store): Promise<void> {
  await leasedSession(store, 's1');
  await store.commitStep({
    session: 's1',
    leaseOwner: 'run-1',
    expectedMessageCount: 0,
    append: [user('order two copies')],
    at: at(1),
  });
  await raise(store, 's1', [
    request({ id: 'r1', session: 's1' }),
    request({ id: 'r2', session: 's1', createdAt: at(11) }),
  ]);
  await store.commitStep({
    session: 's1',
    leaseOwner: 'run-1',
    expectedMessageCount: 3,
    append: [],
    batch: {
      messageSeq: 2,
      calls: [
        {
          callId: 'call-r2',
          tool: 'place_order',
          args: {},
          disposition: { kind: 'approval', approvalId: 'r2' },
        },
      ],
    },
    at: at(12),
  });
  await store.decide('r1', byPerson('approved', 13));
  await store.startExecution({
    requestId: 'r1',
    session: 's1',
    callId: 'call-r1',
    tool: 'place_order',
    args: { isbn: '978-0', quantity: 2 },
    idempotencyKey: 'countersign:r1',
    at: at(14),
  });
  await store.finishExecution('r1', { status: 'succeeded', result: { orderId: 'o-1' }, at: at(15) });
}

export function transferCases(ctx: ConformanceContext): void {
  describe('export and import', () => {
    it('round-trips a whole session into a fresh store', async () => {
      const source = ctx.store();
      await fullSession(source);
      const snapshot = await source.exportSession('s1');
      expect(snapshot?.messages).toHaveLength(3);
      expect(snapshot?.approvals.map((approval) => approval.id)).toEqual(['r1', 'r2']);
      expect(snapshot?.executions.map((record) => record.requestId)).toEqual(['r1']);
      if (snapshot === null) throw new Error('no snapshot');

      const { store: target, cleanup } = await ctx.fresh();
      try {
        await target.importSession(snapshot, [event('session.imported', 's1')]);
        expect(await target.exportSession('s1')).toEqual(snapshot);
        expect(await target.getLease('s1')).toEqual({ owner: null, untilMs: 0 });
        expect((await target.listAudit()).map((entry) => entry.kind)).toEqual(['session.imported']);
        expect(await target.getApproval('r2')).toEqual(await source.getApproval('r2'));
      } finally {
        await target.close();
        await cleanup();
      }
    });

    it('an imported session carries on where it left off', async () => {
      const source = ctx.store();
      await fullSession(source);
      const snapshot = await source.exportSession('s1');
      if (snapshot === null) throw new Error('no snapshot');
      const { store: target, cleanup } = await ctx.fresh();
      try {
        await target.importSession(snapshot);
        await target.acquireLease({
          session: 's1',
          owner: 'run-2',
          untilMs: Date.now() + 60_000,
          nowMs: Date.now(),
        });
        const record = await target.commitStep({
          session: 's1',
          leaseOwner: 'run-2',
          expectedMessageCount: 3,
          append: [user('thanks')],
          batch: null,
          at: at(20),
        });
        expect(record.messageCount).toBe(4);
        expect((await target.loadMessages('s1')).at(-1)).toEqual({
          seq: 3,
          at: at(20),
          message: user('thanks'),
        });
        expect((await target.decide('r2', byPerson('rejected', 21))).won).toBe(true);
      } finally {
        await target.close();
        await cleanup();
      }
    });

    it('refuses to import over an existing session, changing nothing', async () => {
      const store = ctx.store();
      await fullSession(store);
      const snapshot = await store.exportSession('s1');
      if (snapshot === null) throw new Error('no snapshot');
      const altered = structuredClone(snapshot);
      altered.session.agent = 'someone-else';
      await expect(store.importSession(altered, [event('session.imported', 's1')])).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
      expect((await store.getSession('s1'))?.agent).toBe('bookstore');
      expect(await store.listAudit()).toEqual([]);
    });

    it('refuses a snapshot whose messages do not match its count', async () => {
      const store = ctx.store();
      await fullSession(store);
      const snapshot = await store.exportSession('s1');
      if (snapshot === null) throw new Error('no snapshot');
      const { store: target, cleanup } = await ctx.fresh();
      try {
        const gap = { ...snapshot, messages: snapshot.messages.filter((message) => message.seq !== 1) };
        await expect(target.importSession(gap)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
        expect(await target.getSession('s1')).toBeNull();
      } finally {
        await target.close();
        await cleanup();
      }
    });

    it('refuses a snapshot whose request ids are already taken, writing nothing', async () => {
      const store = ctx.store();
      await fullSession(store);
      const snapshot = await store.exportSession('s1');
      if (snapshot === null) throw new Error('no snapshot');
      const renamed = structuredClone(snapshot);
      renamed.session.id = 's9';
      for (const approval of renamed.approvals) approval.session = 's9';
      renamed.executions = [];
      await expect(store.importSession(renamed)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(await store.getSession('s9')).toBeNull();
      expect(await store.loadMessages('s9')).toEqual([]);
    });
  });
}
