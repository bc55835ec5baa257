import { describe, expect, it } from 'vitest';
import { SessionBusyError } from '../core/errors/session-busy-error.ts';
import { StoreUnavailableError } from '../core/errors/store-unavailable-error.ts';
import { formatOwner, parseOwner } from '../liveness/lease-owner.ts';
import type { Liveness } from '../liveness/liveness.ts';
import { localLiveness } from '../liveness/local/local-liveness.ts';
import { thisProcess } from '../liveness/process-space.ts';
import { createMemoryStore } from '../store/memory/memory-store.ts';
import type { Store } from '../store/store.ts';
import { acquireSessionLease, newLeaseOwner } from './lease.ts';

/** A liveness backend (unit-test fake) whose answers the test sets; it counts the questions. */
function fakeLiveness(options: { token?: string | null; released?: () => Set<string> }) {
  let asked = 0;
  const liveness: Liveness = {
    ...localLiveness,
    kind: 'fake',
    token: async () => options.token ?? null,
    async released(tokens) {
      asked += 1;
      const answer = options.released?.() ?? new Set<string>();
      return new Set(tokens.filter((token) => answer.has(token)));
    },
  };
  return { liveness, asked: () => asked };
}

/** The memory store with a liveness backend, as a PostgreSQL store carries its own. */
async function storeWith(liveness: Liveness): Promise<Store> {
  const inner = createMemoryStore();
  await inner.ensureSession({ id: 's', agent: 'a', principal: null, at: new Date(0).toISOString() });
  return new Proxy(inner, {
    get: (target, property, receiver) =>
      property === 'liveness' ? liveness : Reflect.get(target, property, receiver),
  });
}

const elsewhere = (token: string) => formatOwner('other/1.0123456789abcdef', 7, 'n', token);
const hold = (store: Store, owner: string) =>
  store.acquireLease({ session: 's', owner, untilMs: Date.now() + 20_000, nowMs: Date.now() });

describe('session leases and liveness (unit, memory store and a fake liveness)', () => {
  it('an owner carries the token its process holds, and none while it holds none', async () => {
    const withToken = parseOwner(
      await newLeaseOwner(await storeWith(fakeLiveness({ token: 'pgab' }).liveness)),
    );
    expect(withToken).toEqual({ space: thisProcess().space, pid: process.pid, token: 'pgab' });
    expect(parseOwner(await newLeaseOwner(createMemoryStore()))?.token).toBeNull();
  });

  it('every run of one process is its own owner, so a stale run cannot pass for the run that took the lease again', async () => {
    // The step commit is fenced by the owner alone (src/store/lease-rules.ts): that is only
    // safe while a process that lost a lease and took it again does so under a new owner.
    const store = await storeWith(fakeLiveness({ token: 'pgab' }).liveness);
    const owners = await Promise.all(Array.from({ length: 200 }, () => newLeaseOwner(store)));
    expect(new Set(owners).size).toBe(owners.length);
    for (const owner of owners) {
      expect(parseOwner(owner)).toEqual({ space: thisProcess().space, pid: process.pid, token: 'pgab' });
    }
    const [stale, again] = owners as [string, string];
    await hold(store, stale);
    await store.releaseLease('s', stale);
    await hold(store, again);
    await expect(
      store.commitStep({
        session: 's',
        leaseOwner: stale,
        expectedMessageCount: 0,
        append: [],
        at: new Date(1).toISOString(),
      }),
    ).rejects.toBeInstanceOf(SessionBusyError);
  });

  it('takes over a lease whose holder elsewhere has released its token, after the confirming look', async () => {
    const { liveness, asked } = fakeLiveness({ released: () => new Set(['pgdead']) });
    const store = await storeWith(liveness);
    await hold(store, elsewhere('pgdead'));
    const started = Date.now();
    await acquireSessionLease(store, 's', 'me', { leaseMs: 20_000, waitMs: 5000 });
    expect(Date.now() - started).toBeLessThan(1500);
    expect((await store.getLease('s'))?.owner).toBe('me');
    expect(asked()).toBe(2);
  });

  it('waits for a live holder elsewhere, asking about it twice a second, not at every 100 ms poll', async () => {
    const { liveness, asked } = fakeLiveness({});
    const store = await storeWith(liveness);
    await hold(store, elsewhere('pglive'));
    await expect(
      acquireSessionLease(store, 's', 'me', { leaseMs: 20_000, waitMs: 2500 }),
    ).rejects.toBeInstanceOf(SessionBusyError);
    expect(asked()).toBeGreaterThanOrEqual(4);
    expect(asked()).toBeLessThanOrEqual(6);
    expect((await store.getLease('s'))?.owner).toBe(elsewhere('pglive'));
  });

  it('an edited lease row (garbage, empty, this process under another nonce) is not taken early, nor kept past its term', async () => {
    // Every token asked about is released: only the rule and the term protect the lease.
    const { liveness } = fakeLiveness({ released: () => new Set(['pgaa']) });
    const store = await storeWith(liveness);
    const me = thisProcess();
    for (const owner of ['', 'x'.repeat(100_000), formatOwner(me.space, process.pid, 'earlier', 'pgaa')]) {
      const termMs = 300;
      const heldAt = Date.now();
      await store.acquireLease({ session: 's', owner, untilMs: heldAt + termMs, nowMs: heldAt });
      await acquireSessionLease(store, 's', 'me', { leaseMs: 20_000, waitMs: 5000 });
      expect(Date.now() - heldAt).toBeGreaterThanOrEqual(termMs);
      expect((await store.getLease('s'))?.owner).toBe('me');
      await store.releaseLease('s', 'me');
    }
  });

  it('a liveness question that fails is STORE_UNAVAILABLE, and the lease is left as it was', async () => {
    const { liveness } = fakeLiveness({
      released: () => {
        throw new StoreUnavailableError('The store at memory: cannot be reached.');
      },
    });
    const store = await storeWith(liveness);
    await hold(store, elsewhere('pgaa'));
    const before = await store.getLease('s');
    await expect(
      acquireSessionLease(store, 's', 'me', { leaseMs: 20_000, waitMs: 1000 }),
    ).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.getLease('s')).toEqual(before);
  });
});
