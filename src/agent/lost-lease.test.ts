import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { kitchenAgent } from '../../examples/kitchen/app.ts';
import { dropSchema, freshSchema, postgresForTests } from '../../test/helpers/postgres.ts';
import { SessionBusyError } from '../core/errors/session-busy-error.ts';
import { onSignal } from '../core/signals.ts';
import { createDemoModel } from '../model/demo-model.ts';
import { createMemoryStore } from '../store/memory/memory-store.ts';
import { createPostgresStore } from '../store/postgres/postgres-store.ts';
import { createSqliteStore } from '../store/sqlite/sqlite-store.ts';
import type { ExecutionStart, Store } from '../store/store.ts';
import { createAgent } from './create-agent.ts';

/**
 * The memory store, but just before this run's first `at` (its ledger start, or its look at
 * the ledger) another process takes the session over and starts the call itself, as a
 * process that judged this one dead (its liveness lock gone during a failover, say) does.
 */
function takenOverAt(
  inner: Store,
  at: 'startExecution' | 'getExecution',
  call: () => ExecutionStart | undefined,
): Store {
  let done = false;
  return new Proxy(inner, {
    get(target, property, receiver) {
      const own = Reflect.get(target, property, receiver);
      const start = call();
      // Armed once the test says what the other process starts.
      if (property !== at || done || start === undefined) return own;
      return async (...args: unknown[]) => {
        done = true;
        const holder = (await target.getLease(start.session))?.owner ?? undefined;
        const now = Date.now();
        const other = 'other-host/1.0123456789abcdef:7:n0nce:pgab';
        const lease = { session: start.session, owner: other, untilMs: now + 20_000, nowMs: now };
        expect(await target.acquireLease({ ...lease, ...(holder ? { takeOverFrom: holder } : {}) })).toBe(
          true,
        );
        await target.startExecution(start);
        return (own as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** What the new holder starts: the request's call, as its own run would. */
async function theCall(store: Store, id: string): Promise<ExecutionStart> {
  const request = (await store.getApproval(id))!;
  return {
    requestId: id,
    session: request.session,
    callId: request.callId,
    tool: request.tool,
    args: request.args,
    idempotencyKey: `countersign:${id}`,
    at: new Date().toISOString(),
  };
}

/** The outcome-unknown signals raised while `work` runs; it must fail with SESSION_BUSY. */
async function unknownsWhileBusy(work: () => Promise<unknown>): Promise<unknown[]> {
  const unknowns: unknown[] = [];
  const stop = onSignal((event) => {
    if (event.kind === 'outcome-unknown') unknowns.push(event);
  });
  try {
    await expect(work()).rejects.toBeInstanceOf(SessionBusyError);
  } finally {
    stop();
  }
  return unknowns;
}

const EGGS = "We're out of eggs, put a dozen on the list.";

describe('a run that lost its lease to another process', () => {
  it('does not call unknown the call the new holder is running: SESSION_BUSY (at its ledger start)', async () => {
    const inner = createMemoryStore();
    let start: ExecutionStart | undefined;
    const store = takenOverAt(inner, 'startExecution', () => start);
    const agent = kitchenAgent.with({ store, model: createDemoModel() });
    const id = (await agent.chat('k-lost', EGGS)).approvals[0]!.id;
    start = await theCall(inner, id);
    expect(await unknownsWhileBusy(() => agent.decide(id, { approved: true, by: 'ann' }))).toEqual([]);
    // Still the new holder's to finish: running, not unknown.
    expect(await inner.getExecution(id)).toMatchObject({ status: 'started' });
  });

  it('nor when it finds the call started as it looks at the ledger (resume)', async () => {
    const inner = createMemoryStore();
    let start: ExecutionStart | undefined;
    const store = takenOverAt(inner, 'getExecution', () => start);
    const continuations = {
      enqueue: async () => undefined,
      work: async () => undefined,
      close: async () => undefined,
    };
    const agent = kitchenAgent.with({ store, model: createDemoModel(), continuations });
    const id = (await agent.chat('k-lost', EGGS)).approvals[0]!.id;
    expect((await agent.decide(id, { approved: true, by: 'ann' })).status).toBe('continuing');
    start = await theCall(inner, id);
    expect(await unknownsWhileBusy(() => agent.resume('k-lost'))).toEqual([]);
    expect(await inner.getExecution(id)).toMatchObject({ status: 'started' });
  });
});

/** A promise and its resolve, to hand a moment from one side of a test to the other. */
function moment<T = void>(): { reached: Promise<T>; reach(value: T): void } {
  let reach!: (value: T) => void;
  const reached = new Promise<T>((resolve) => {
    reach = resolve;
  });
  return { reached, reach };
}

/** `inner` with some methods replaced; everything else is `inner`'s own. */
function withMethods(inner: Store, methods: Partial<Store>): Store {
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (Object.hasOwn(methods, property)) return methods[property as keyof Store];
      return Reflect.get(target, property, receiver);
    },
  });
}

const pgUrl = await postgresForTests();
const dirs: string[] = [];
const schemas: string[] = [];
const opened: Store[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  for (const schema of schemas.splice(0)) await dropSchema(schema);
});

const backends: Array<[string, () => Promise<Store>]> = [
  ['memory', async () => createMemoryStore()],
  [
    'sqlite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'countersign-fence-'));
      dirs.push(dir);
      return createSqliteStore({ path: join(dir, 'store.db') });
    },
  ],
  ...(pgUrl === null
    ? []
    : [
        [
          'postgres',
          async () => {
            const schema = freshSchema('fence');
            schemas.push(schema);
            return createPostgresStore({ connectionString: pgUrl, schema });
          },
        ] as [string, () => Promise<Store>],
      ]),
];

describe('a run that lost its lease before its ledger start', () => {
  it.each(backends)(
    '%s: is refused there and runs nothing; the process that took the session over runs the call once',
    async (_name, open) => {
      const inner = await open();
      opened.push(inner);
      const aAtStart = moment();
      const bAtStart = moment();
      const aTried = moment<unknown>();
      // Process A, paused (a GC pause, a frozen VM) once its call is approved: its renewals
      // do not land, and it gets to its ledger start only after B has taken the session over.
      const storeA = withMethods(inner, {
        renewLease: async () => false,
        async startExecution(start, audit) {
          aAtStart.reach();
          await bAtStart.reached;
          try {
            const started = await inner.startExecution(start, audit);
            aTried.reach(started);
            return started;
          } catch (error) {
            aTried.reach(error);
            throw error;
          }
        },
      });
      // Process B starts the call only once A has tried: without the fence A's row would be
      // there first, and B would find the call started and call it unknown.
      const storeB = withMethods(inner, {
        async startExecution(start, audit) {
          bAtStart.reach();
          await aTried.reached;
          return inner.startExecution(start, audit);
        },
      });
      const a = createAgent({
        ...kitchenAgent.options,
        store: storeA,
        model: createDemoModel(),
        leaseMs: 300,
      });
      const b = kitchenAgent.with({ store: storeB, model: createDemoModel() });
      const id = (await a.chat('k-fence', EGGS)).approvals[0]!.id;

      const unknowns: unknown[] = [];
      const stop = onSignal((event) => {
        if (event.kind === 'outcome-unknown') unknowns.push(event);
      });
      try {
        const decided = a.decide(id, { approved: true, by: 'ann' }).then(
          () => 'continued',
          (error: unknown) => error,
        );
        await aAtStart.reached;
        const ownerA = (await inner.getLease('k-fence'))?.owner;
        expect(ownerA).toEqual(expect.any(String));
        // B continues the session: it takes the lease once A's term has run out (A is alive
        // in this process, so not taken for dead) and stops at its own ledger start.
        const resumed = b.resume('k-fence');
        await bAtStart.reached;
        expect((await inner.getLease('k-fence'))?.owner).not.toBe(ownerA);

        // A's start is refused in the store: no row, so A's tool does not run.
        expect(await aTried.reached).toMatchObject({
          code: 'SESSION_BUSY',
          message: expect.stringContaining(id),
        });
        expect(await decided).toBeInstanceOf(SessionBusyError);

        const turn = await resumed;
        expect(turn.status).toBe('completed');
        expect(turn.unknown).toEqual([]);
      } finally {
        stop();
      }
      expect(unknowns).toEqual([]);
      // Run once, by B: one ledger row, succeeded; one started and one finished entry; the
      // item on the list once.
      expect((await inner.listExecutions()).map((row) => [row.requestId, row.status])).toEqual([
        [id, 'succeeded'],
      ]);
      const kinds = (await inner.listAudit({ session: 'k-fence' })).map((entry) => entry.kind);
      expect(kinds.filter((kind) => kind.startsWith('execution.'))).toEqual([
        'execution.started',
        'execution.finished',
      ]);
      const list = (await inner.getState('kitchen', 'shopping-list')) as string[];
      expect(list.filter((item) => item.includes('egg'))).toHaveLength(1);
    },
  );
});
