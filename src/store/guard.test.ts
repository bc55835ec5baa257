import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { assistantCalling, at, atMs, byPerson, request, user } from './conformance/fixtures.ts';
import { guardStore, isGuarded } from './guard.ts';
import { createMemoryStore } from './memory/memory-store.ts';
import { createSqliteStore } from './sqlite/sqlite-store.ts';
import type { Store } from './store.ts';

/**
 * Counts calls per method. It hides the guard's mark, so `guardStore` wraps it again: the
 * outer guard is the one measured, with a counter on each side of it.
 */
function counted<S extends Store>(inner: S): { store: S; calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  const store = new Proxy(inner, {
    get(target, property) {
      if (typeof property === 'symbol') return undefined;
      const value: unknown = Reflect.get(target, property);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls[property] = (calls[property] ?? 0) + 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, calls };
}

/** One request's life: raised in a step, decided, run, its result handed back; then a move. */
async function requestLife(store: Store, into: Store): Promise<void> {
  await store.ensureSession({ id: 's1', agent: 'bookstore', principal: 'c-100', at: at(0) });
  await store.acquireLease({ session: 's1', owner: 'run-1', untilMs: atMs(100), nowMs: atMs(0) });
  await store.renewLease({ session: 's1', owner: 'run-1', untilMs: atMs(200) });
  const raised = request({ id: 'r1', session: 's1' });
  await store.commitStep({
    session: 's1',
    leaseOwner: 'run-1',
    expectedMessageCount: 0,
    append: [user('order two copies'), assistantCalling(raised.callId, raised.tool, raised.args)],
    approvals: [raised],
    batch: {
      messageSeq: 1,
      calls: [
        {
          callId: raised.callId,
          tool: raised.tool,
          args: raised.args,
          disposition: { kind: 'approval', approvalId: 'r1' },
        },
      ],
    },
    at: at(1),
  });
  await store.releaseLease('s1', 'run-1');
  await store.decide('r1', byPerson('approved', 2), [], {
    lease: { owner: 'run-2', untilMs: atMs(300), nowMs: atMs(2) },
  });
  await store.listStalledSessions({ nowMs: atMs(400) });
  await store.startExecution({
    requestId: 'r1',
    session: 's1',
    callId: raised.callId,
    tool: raised.tool,
    args: raised.args,
    idempotencyKey: 'countersign:r1',
    at: at(3),
  });
  await store.commitStep({
    session: 's1',
    leaseOwner: 'run-2',
    expectedMessageCount: 2,
    append: [],
    batch: null,
    finishes: [{ requestId: 'r1', status: 'succeeded', result: { ok: true }, at: at(4) }],
    releaseLease: true,
    at: at(4),
  });
  const snapshot = await store.exportSession('s1');
  if (snapshot === null) throw new Error('no snapshot');
  await into.importSession(snapshot);
}

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('guardStore', () => {
  it('the open functions return guarded stores, and guarding one again returns it as it is', () => {
    const store = createMemoryStore();
    expect(isGuarded(store)).toBe(true);
    expect(guardStore(store)).toBe(store);
  });

  it('adds no store call: each call through the guard reaches the backend once, nothing more', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'countersign-guard-'));
    dirs.push(dir);
    for (const open of [
      () => createMemoryStore(),
      (name: string) => createSqliteStore({ path: join(dir, `${name}.db`) }),
    ]) {
      const backend = counted(open('a'));
      const outside = counted(guardStore(backend.store));
      const target = open('b');
      await requestLife(outside.store, target);
      console.log(`${backend.store.kind}: calls through the guard`, outside.calls);
      expect(Object.values(outside.calls).reduce((sum, n) => sum + n, 0)).toBe(10);
      expect(backend.calls).toEqual(outside.calls);
      await backend.store.close();
      await target.close();
    }
  });

  it('refuses before the backend is called: a bad input costs no store call', async () => {
    const backend = counted(createMemoryStore());
    const store = guardStore(backend.store);
    await expect(store.listStalledSessions({ nowMs: 0, limit: 0 })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
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
    expect(backend.calls).toEqual({});
  });
});
