import { expect } from 'vitest';
import type { SessionSnapshot, Store } from '../store.ts';
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

    it('refuses a snapshot that holds a request or a ledger row twice, writing nothing', async () => {
      const store = ctx.store();
      await fullSession(store);
      const snapshot = await store.exportSession('s1');
      if (snapshot === null) throw new Error('no snapshot');
      const { cleanup, store: target } = await ctx.fresh();
      try {
        const doubledRequest = structuredClone(snapshot);
        doubledRequest.approvals.push(structuredClone(doubledRequest.approvals[0]!));
        await expect(target.importSession(doubledRequest)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
        const doubledLedger = structuredClone(snapshot);
        doubledLedger.executions.push(structuredClone(doubledLedger.executions[0]!));
        await expect(target.importSession(doubledLedger)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
        expect(await target.getSession('s1')).toBeNull();
        expect(await target.getApproval('r1')).toBeNull();
        expect(await target.listAudit()).toEqual([]);
      } finally {
        await target.close();
        await cleanup();
      }
    });

    it('refuses malformed audit events beside a good snapshot, naming the field, writing nothing', async () => {
      const store = ctx.store();
      await fullSession(store);
      const snapshot = await store.exportSession('s1');
      if (snapshot === null) throw new Error('no snapshot');
      const { cleanup, store: target } = await ctx.fresh();
      try {
        const good = { kind: 'session.imported', session: 's1', requestId: null, actor: 'ops', data: {} };
        for (const [audit, field] of [
          [[{ ...good, kind: 'session.stolen' }], '[0].kind'],
          [[good, { ...good, actor: 42 }], '[1].actor'],
          [[{ ...good, data: ['not', 'an', 'object'] }], '[0].data'],
          [{ ...good }, 'the whole value'],
        ] as const) {
          const refused = await target.importSession(snapshot, audit as never).then(
            () => null,
            (error: { code?: string; message?: string }) => error,
          );
          expect(refused?.code, field).toBe('INVALID_INPUT');
          expect(refused?.message, field).toContain(field);
        }
        expect(await target.getSession('s1')).toBeNull();
        expect(await target.listAudit()).toEqual([]);
      } finally {
        await target.close();
        await cleanup();
      }
    });

    it('refuses a snapshot holding a time the stores cannot order (past 9999, before 0000, a six-digit year), writing nothing', async () => {
      const store = ctx.store();
      await fullSession(store);
      const snapshot = await store.exportSession('s1');
      if (snapshot === null) throw new Error('no snapshot');
      // Stored as text, each would sort before every four-digit year: a session created in
      // +010000 would read as the oldest of all, a request raised then as long overdue.
      const edits: Array<[string, (copy: SessionSnapshot, time: string) => void]> = [
        [
          'Session s1: createdAt',
          (copy, time) => {
            copy.session.createdAt = time;
          },
        ],
        [
          'Session s1: updatedAt',
          (copy, time) => {
            copy.session.updatedAt = time;
          },
        ],
        [
          'Message 1 of session s1: at',
          (copy, time) => {
            copy.messages[1]!.at = time;
          },
        ],
        [
          'Request r2: createdAt',
          (copy, time) => {
            copy.approvals[1]!.createdAt = time;
          },
        ],
        [
          'Request r1: decision.at',
          (copy, time) => {
            copy.approvals[0]!.decision!.at = time;
          },
        ],
        [
          'Ledger row r1: startedAt',
          (copy, time) => {
            copy.executions[0]!.startedAt = time;
          },
        ],
        [
          'Ledger row r1: finishedAt',
          (copy, time) => {
            copy.executions[0]!.finishedAt = time;
          },
        ],
      ];
      const { cleanup, store: target } = await ctx.fresh();
      try {
        for (const [what, edit] of edits) {
          for (const time of [
            '+010000-01-01T00:00:00.000Z',
            '-000001-12-31T00:00:00.000Z',
            '+002030-01-01T00:00:00.000Z',
            // Readable and in range, but not the one UTC form: as text, "…T00:00:00+02:00"
            // sorts after "…T00:00:00.000Z" though it is two hours earlier.
            '2030-01-01T00:00:00+02:00',
            '2030-01-01T00:00:00Z',
          ]) {
            const copy = structuredClone(snapshot);
            edit(copy, time);
            await expect(target.importSession(copy, [event('session.imported', 's1')])).rejects.toMatchObject(
              {
                code: 'INVALID_INPUT',
                message: expect.stringContaining(`${what} "${time}"`),
              },
            );
          }
        }
        expect(await target.getSession('s1')).toBeNull();
        expect(await target.getApproval('r1')).toBeNull();
        expect(await target.listAudit()).toEqual([]);
        // The last instant a store can name is still taken.
        const last = structuredClone(snapshot);
        last.session.createdAt = '9999-12-31T23:59:59.999Z';
        await target.importSession(last);
        expect((await target.getSession('s1'))?.createdAt).toBe('9999-12-31T23:59:59.999Z');
      } finally {
        await target.close();
        await cleanup();
      }
    });

    it('refuses a malformed snapshot (an object for an array, a missing field, a wrong type, too deep) with INVALID_INPUT naming where, writing nothing', async () => {
      const store = ctx.store();
      await fullSession(store);
      const snapshot = await store.exportSession('s1');
      if (snapshot === null) throw new Error('no snapshot');
      // A library caller's object is typed only at compile time: these are what a plain
      // JavaScript caller, a cast or a hand-built snapshot can hand over.
      let deep: unknown = 1;
      for (let i = 0; i < 100_000; i++) deep = { k: deep };
      const edits: Array<[string, (copy: SessionSnapshot) => unknown]> = [
        ['the snapshot itself: Invalid input: expected object, received null', () => null],
        ['approvals: Invalid input: expected array, received object', (copy) => ({ ...copy, approvals: {} })],
        [
          'messages: Invalid input: expected array, received object',
          (copy) => ({ ...copy, messages: { ...copy.messages } }),
        ],
        ['session: Invalid input: expected object, received undefined', ({ session: _, ...rest }) => rest],
        [
          'executions: Invalid input: expected array, received undefined',
          ({ executions: _, ...rest }) => rest,
        ],
        [
          'approvals[0].argsJson: Invalid input: expected string, received undefined',
          (copy) => {
            Reflect.deleteProperty(copy.approvals[0]!, 'argsJson');
            return copy;
          },
        ],
        [
          'session.agent: Invalid input: expected string, received number',
          (copy) => {
            Reflect.set(copy.session, 'agent', 42);
            return copy;
          },
        ],
        [
          'approvals[0].decision: Invalid input: expected object, received array',
          (copy) => {
            Reflect.set(copy.approvals[0]!, 'decision', []);
            return copy;
          },
        ],
        [
          'executions[0].attempts: Invalid input: expected number, received string',
          (copy) => {
            Reflect.set(copy.executions[0]!, 'attempts', '1');
            return copy;
          },
        ],
        [
          'session.messageCount: Invalid input: expected int, received number',
          (copy) => {
            copy.session.messageCount = 2.5;
            return copy;
          },
        ],
        [
          'messages[1].message.role',
          (copy) => {
            Reflect.set(copy.messages[1]!.message, 'role', 'robot');
            return copy;
          },
        ],
        [
          'messages[0].at: Invalid input: expected string, received Date',
          (copy) => {
            Reflect.set(copy.messages[0]!, 'at', new Date(at(1)));
            return copy;
          },
        ],
        [
          'approvals[0].args: The value nests deeper than 64 levels',
          (copy) => {
            Reflect.set(copy.approvals[0]!, 'args', deep);
            return copy;
          },
        ],
      ];
      const { cleanup, store: target } = await ctx.fresh();
      try {
        for (const [where, edit] of edits) {
          const input = edit(structuredClone(snapshot)) as SessionSnapshot;
          await expect(
            target.importSession(input, [event('session.imported', 's1')]),
            where,
          ).rejects.toMatchObject({
            code: 'INVALID_INPUT',
            message: expect.stringContaining(where),
          });
        }
        expect(await target.getSession('s1')).toBeNull();
        expect(await target.getApproval('r1')).toBeNull();
        expect(await target.getExecution('r1')).toBeNull();
        expect(await target.listAudit()).toEqual([]);
        // The refusals left nothing behind: the whole snapshot imports once, and only once.
        await target.importSession(snapshot, [event('session.imported', 's1')]);
        expect(await target.exportSession('s1')).toEqual(snapshot);
        await expect(target.importSession(snapshot, [event('session.imported', 's1')])).rejects.toMatchObject(
          {
            code: 'INVALID_INPUT',
          },
        );
        expect(await target.exportSession('s1')).toEqual(snapshot);
        expect(await target.listAudit()).toHaveLength(1);
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
