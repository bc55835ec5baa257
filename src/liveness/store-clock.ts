import type { Liveness } from './liveness.ts';

/** A store as far as its clock goes: `Store#liveness`, which only stores other hosts share have. */
export interface ClockedStore {
  readonly liveness?: Pick<Liveness, 'now'> | undefined;
}

/**
 * Now, in epoch ms, on the clock every process sharing `store` writes and judges the times
 * that decide who may take a row: a session lease's term, a request's claim, a webhook
 * delivery's claim and its retry time. The one rule for all of them.
 *
 * A store other hosts share has one (Liveness#now; PostgreSQL: the server's clock, read once
 * and carried forward, postgres/server-clock.ts), so hosts whose wall clocks disagree still
 * agree on when a claim lapses: on each host's own, one a minute ahead took live claims a
 * minute early, and one a minute behind held its own a minute too long. A store only this
 * host uses (SQLite, memory: no liveness) runs on `local`, this host's clock: the caller's
 * own (a server's `now`, which tests move), Date.now unless given.
 */
export function storeNow(store: ClockedStore, local: () => number = Date.now): Promise<number> {
  const shared = store.liveness;
  return shared === undefined ? Promise.resolve(local()) : shared.now();
}
