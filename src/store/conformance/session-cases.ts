import { expect } from 'vitest';
import type { OpenBatch } from '../../core/session.ts';
import { assistantCalling, at, type ConformanceContext, leasedSession, request, user } from './fixtures.ts';
import { describe, it } from './harness.ts';
import { storedEvent } from './stored-event.ts';

const batch: OpenBatch = {
  messageSeq: 1,
  calls: [
    {
      callId: 'c1',
      tool: 'place_order',
      args: { q: 1 },
      disposition: { kind: 'approval', approvalId: 'r1' },
    },
  ],
};

export function sessionCases(ctx: ConformanceContext): void {
  describe('sessions', () => {
    it('creates a session with no messages and no batch', async () => {
      const created = await ctx
        .store()
        .ensureSession({ id: 's1', agent: 'bookstore', principal: 'alice', at: at(1) });
      expect(created).toEqual({
        id: 's1',
        agent: 'bookstore',
        principal: 'alice',
        createdAt: at(1),
        updatedAt: at(1),
        messageCount: 0,
        batch: null,
      });
      expect(await ctx.store().getSession('s1')).toEqual(created);
    });

    it('ensureSession is idempotent and keeps the first principal', async () => {
      const store = ctx.store();
      await store.ensureSession({ id: 's1', agent: 'bookstore', principal: 'alice', at: at(1) });
      const again = await store.ensureSession({ id: 's1', agent: 'other', principal: 'mallory', at: at(2) });
      expect(again.principal).toBe('alice');
      expect(again.agent).toBe('bookstore');
      expect(again.createdAt).toBe(at(1));
      expect(await store.listSessions()).toHaveLength(1);
    });

    it('stores a null principal', async () => {
      const created = await ctx.store().ensureSession({ id: 's1', agent: 'a', principal: null, at: at(1) });
      expect(created.principal).toBeNull();
      expect((await ctx.store().getSession('s1'))?.principal).toBeNull();
    });

    it('lists sessions oldest first', async () => {
      const store = ctx.store();
      await store.ensureSession({ id: 'b', agent: 'a', principal: null, at: at(2) });
      await store.ensureSession({ id: 'c', agent: 'a', principal: null, at: at(1) });
      await store.ensureSession({ id: 'a', agent: 'a', principal: null, at: at(2) });
      expect((await store.listSessions()).map((session) => session.id)).toEqual(['c', 'a', 'b']);
    });

    it('breaks ties by id in code-point order, whatever the collation of the database', async () => {
      const store = ctx.store();
      const ids = ['b', 'B', 'a', '_x', '-x', 'A', '10', '9', 'é'];
      for (const id of ids) await store.ensureSession({ id, agent: 'a', principal: null, at: at(1) });
      expect((await store.listSessions()).map((session) => session.id)).toEqual([
        '-x',
        '10',
        '9',
        'A',
        'B',
        '_x',
        'a',
        'b',
        'é',
      ]);
    });

    it('returns null or empty for unknown ids', async () => {
      const store = ctx.store();
      expect(await store.getSession('nope')).toBeNull();
      expect(await store.loadMessages('nope')).toEqual([]);
      expect(await store.getLease('nope')).toBeNull();
      expect(await store.getApproval('nope')).toBeNull();
      expect(await store.getExecution('nope')).toBeNull();
      expect(await store.exportSession('nope')).toBeNull();
      expect(await store.listSessions()).toEqual([]);
    });
  });

  describe('commitStep', () => {
    it('appends messages with increasing seq and stamps the step time', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const first = await store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [user('hello'), assistantCalling('c1', 'search', { q: 'dune' })],
        at: at(5),
      });
      expect(first.messageCount).toBe(2);
      expect(first.updatedAt).toBe(at(5));
      const second = await store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 2,
        append: [{ role: 'tool', results: [{ callId: 'c1', tool: 'search', output: ['Dune'] }] }],
        at: at(6),
      });
      expect(second.messageCount).toBe(3);
      expect(second.createdAt).toBe(at(0));
      const messages = await store.loadMessages('s1');
      expect(messages.map((message) => message.seq)).toEqual([0, 1, 2]);
      expect(messages.map((message) => message.at)).toEqual([at(5), at(5), at(6)]);
      expect(messages[0]?.message).toEqual(user('hello'));
      expect(messages[2]?.message).toEqual({
        role: 'tool',
        results: [{ callId: 'c1', tool: 'search', output: ['Dune'] }],
      });
    });

    it('returns exactly the record a later read gives', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const steps: Array<{ batch?: OpenBatch | null }> = [{}, { batch }, {}, { batch: null }, {}];
      for (const [index, extra] of steps.entries()) {
        const returned = await store.commitStep({
          session: 's1',
          leaseOwner: 'run-1',
          expectedMessageCount: index,
          append: [user(`step ${index}`)],
          ...extra,
          at: at(index + 1),
        });
        expect(returned).toEqual(await store.getSession('s1'));
        expect(returned).toMatchObject({ agent: 'bookstore', principal: 'alice', createdAt: at(0) });
      }
    });

    it('sets, keeps and clears the open batch', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const step = (expected: number, extra: { batch?: OpenBatch | null }) =>
        store.commitStep({
          session: 's1',
          leaseOwner: 'run-1',
          expectedMessageCount: expected,
          append: [user(`m${expected}`)],
          at: at(expected + 1),
          ...extra,
        });
      expect((await step(0, { batch })).batch).toEqual(batch);
      expect((await step(1, {})).batch).toEqual(batch);
      expect((await store.getSession('s1'))?.batch).toEqual(batch);
      expect((await step(2, { batch: null })).batch).toBeNull();
      expect((await store.getSession('s1'))?.batch).toBeNull();
    });

    it('inserts the approval requests of the step', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const r1 = request({ id: 'r1', session: 's1', args: { b: [1, { z: true, a: null }], a: 'x' } });
      await store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [assistantCalling(r1.callId, r1.tool, r1.args)],
        approvals: [r1],
        at: at(10),
      });
      expect(await store.getApproval('r1')).toEqual(r1);
      expect((await store.getApproval('r1'))?.argsJson).toBe('{"a":"x","b":[1,{"a":null,"z":true}]}');
      expect(await store.listApprovals({ session: 's1' })).toEqual([r1]);
    });

    it('an empty step still moves updatedAt and keeps the count', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const record = await store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [],
        at: at(9),
      });
      expect(record.messageCount).toBe(0);
      expect(record.updatedAt).toBe(at(9));
    });

    it('refuses a step from a run that does not hold the lease, writing nothing', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1', 'run-1');
      const attempt = store.commitStep({
        session: 's1',
        leaseOwner: 'run-2',
        expectedMessageCount: 0,
        append: [user('sneaky')],
        approvals: [request({ id: 'r1', session: 's1' })],
        at: at(5),
      });
      await expect(attempt).rejects.toMatchObject({ code: 'SESSION_BUSY' });
      await expect(attempt).rejects.toThrow(/run-1/);
      expect(await store.loadMessages('s1')).toEqual([]);
      expect(await store.getApproval('r1')).toBeNull();
      expect((await store.getSession('s1'))?.messageCount).toBe(0);
    });

    it('refuses a step when nobody holds the lease', async () => {
      const store = ctx.store();
      await store.ensureSession({ id: 's1', agent: 'a', principal: null, at: at(0) });
      await expect(
        store.commitStep({
          session: 's1',
          leaseOwner: 'run-1',
          expectedMessageCount: 0,
          append: [user('x')],
          at: at(1),
        }),
      ).rejects.toMatchObject({ code: 'SESSION_BUSY' });
    });

    it('refuses a step computed against a stale message count, writing nothing', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [user('a')],
        at: at(1),
      });
      const stale = store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [user('b')],
        batch,
        audit: [
          storedEvent({ kind: 'request.raised', session: 's1', requestId: null, actor: 'x', data: {} }),
        ],
        at: at(2),
      });
      await expect(stale).rejects.toMatchObject({ code: 'SESSION_BUSY' });
      await expect(stale).rejects.toThrow(/1 messages/);
      expect((await store.loadMessages('s1')).map((message) => message.message)).toEqual([user('a')]);
      expect((await store.getSession('s1'))?.batch).toBeNull();
      expect(await store.listAudit()).toEqual([]);
    });

    it('fails with NOT_FOUND for an unknown session', async () => {
      await expect(
        ctx
          .store()
          .commitStep({ session: 'nope', leaseOwner: 'r', expectedMessageCount: 0, append: [], at: at(1) }),
      ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('rejects a duplicate request id without writing any of the step', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [user('a')],
        approvals: [request({ id: 'r1', session: 's1' })],
        at: at(1),
      });
      const duplicate = store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 1,
        append: [user('b')],
        approvals: [
          request({ id: 'r2', session: 's1' }),
          request({ id: 'r1', session: 's1', tool: 'other' }),
        ],
        at: at(2),
      });
      await expect(duplicate).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(await store.loadMessages('s1')).toHaveLength(1);
      expect(await store.getApproval('r2')).toBeNull();
      expect((await store.getApproval('r1'))?.tool).toBe('place_order');
    });

    it('rejects a request whose argsJson is not the canonical JSON of its args', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const bad = {
        ...request({ id: 'r1', session: 's1', args: { b: 1, a: 2 } }),
        argsJson: '{"b":1,"a":2}',
      };
      await expect(
        store.commitStep({
          session: 's1',
          leaseOwner: 'run-1',
          expectedMessageCount: 0,
          append: [],
          approvals: [bad],
          at: at(1),
        }),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(await store.getApproval('r1')).toBeNull();
    });

    it('rejects a request that belongs to another session', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await expect(
        store.commitStep({
          session: 's1',
          leaseOwner: 'run-1',
          expectedMessageCount: 0,
          append: [],
          approvals: [request({ id: 'r1', session: 's2' })],
          at: at(1),
        }),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    });

    it('keeps stored state safe from changes to objects passed in or handed out', async () => {
      const store = ctx.store();
      await leasedSession(store, 's1');
      const message = { role: 'user' as const, text: 'original' };
      const ownBatch: OpenBatch = structuredClone(batch);
      const returned = await store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [message],
        batch: ownBatch,
        at: at(1),
      });
      message.text = 'changed after commit';
      ownBatch.messageSeq = 99;
      returned.messageCount = 42;
      const loaded = await store.loadMessages('s1');
      const first = loaded[0];
      if (first?.message.role === 'user') first.message.text = 'changed after load';
      expect((await store.loadMessages('s1'))[0]?.message).toEqual(user('original'));
      expect(await store.getSession('s1')).toMatchObject({ messageCount: 1, batch: { messageSeq: 1 } });
    });
  });
}
