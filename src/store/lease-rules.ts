import type { LeaseInfo } from '../core/lease.ts';
import type { LeaseFence } from './ports/leases.ts';

/*
 * What holding a session's lease means, for every write fenced on it: `fence.owner` is the
 * stored holder, and the term has not run out at `fence.nowMs` (the lease clock's time,
 * leaseNow in src/agent/lease.ts: on PostgreSQL the server's). It is the complement of
 * "lapsed" in acquireLease (`untilMs < nowMs`): a lease still held at its expiry instant is
 * not free, and one free just after it is not held. The backends test it here (memory,
 * SQLite inside its write transaction) or in SQL (PostgreSQL, in the write's own statement).
 */

/** Whether `fence.owner` holds `lease` at `fence.nowMs`. A missing session's lease is held by no one. */
export function holdsLease(lease: LeaseInfo | null, fence: LeaseFence): boolean {
  return lease !== null && lease.owner === fence.owner && lease.untilMs >= fence.nowMs;
}

/**
 * The same rule as a SQL condition on a sessions row; `owner` and `nowMs` are the backend's
 * placeholders, typed as it needs them.
 */
export function holdsLeaseSql(owner: string, nowMs: string): string {
  return `lease_owner = ${owner} AND lease_until >= ${nowMs}`;
}
