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

/*
 * The step commit (commitStep) is fenced by the owner alone, not by this rule: a run past its
 * term that nobody took over still commits. That is safe because an owner names one run, not
 * a process or a term: newLeaseOwner (src/agent/lease.ts) mints a fresh one, with a random
 * nonce, for every run and every inline decision, and the stores only ever write the owner
 * that asks (acquireLease, decide's lease) or none (releaseLease, a step's releaseLease), never
 * an earlier one back; renewLease only extends a lease its owner still holds. So while the
 * stored owner is the step's, no other run has held the session since this one took it, and
 * the commit, one compare-and-set with the message count, is exactly as if it had landed
 * inside the term; a process that lost a lease and took it again does so as a new owner, and
 * its old run's steps are refused. Refusing on the term would only lose such a step (a
 * finished call's result, leaving its ledger row for a person to reconcile). A ledger start
 * does judge the term (holdsLease): the call it lets run happens after its transaction, where
 * a takeover could meet it. Pinned by the conformance case "a step commit past its term…".
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
