import { deadOwners } from '../liveness/dead-owners.ts';
import type { StalledSession, Store } from '../store/store.ts';
import { leaseNow, livenessOf } from './lease.ts';

/**
 * The stalled sessions (decided, nobody continuing them) that this process may continue
 * now, oldest first, for the sweeps of `countersign serve` and `countersign worker`.
 *
 * The store judges leases by their term only; it cannot see processes. A decision that
 * continues inline takes the lease in its own transaction, so a process killed right after
 * its decision leaves a lease that looks held for up to a full term. `resume` takes such a
 * lease over at once when its holder is dead (acquireSessionLease: a process on this host
 * that no longer exists, or one elsewhere whose liveness token is released); the sweep asks
 * the store for held leases too and applies that same rule here (one liveness question for
 * all the held ones), so what it hands to `resume` is exactly what `resume` can take without
 * waiting.
 * Held leases of live processes (this one included) are dropped: their run is continuing the
 * session. They do count towards `limit`, but only while their run lasts.
 */
export async function continuableStalledSessions(
  store: Store,
  options: { limit: number; agents: readonly string[] },
): Promise<StalledSession[]> {
  // On the store's clock, as acquireSessionLease's leases are (leaseNow).
  const nowMs = await leaseNow(store);
  const listed = await store.listStalledSessions({
    nowMs,
    limit: options.limit,
    agents: options.agents,
    includeHeld: true,
  });
  const held = listed.flatMap(({ lease }) =>
    lease.owner !== null && lease.untilMs >= nowMs ? [lease.owner] : [],
  );
  const dead = await deadOwners(held, livenessOf(store));
  return listed.filter(({ lease }) => lease.owner === null || lease.untilMs < nowMs || dead.has(lease.owner));
}
