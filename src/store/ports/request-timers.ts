import type { ApprovalRequest, RequestClaim, RequestKind, RequestNudges } from '../../core/approval.ts';
import type { AuditEvent } from '../../core/audit.ts';

/** Pending requests whose next nudge has come: what the nudge sweep reads, never every pending row. */
export interface NudgeDueQuery {
  /** ISO-8601: requests whose next nudge time is `<= at` are due. */
  at: string;
  /** At most this many, soonest nudge first (then by id). */
  limit: number;
  /** Only this kind; both when absent. */
  kind?: RequestKind;
}

/**
 * One nudge fired: the row's nudges move from `from` (as the sweep read them) to `to`. The
 * compare-and-set holds when the row is still pending and its next nudge time is still the
 * one `from` gives, so two instances that read the same row fire it once: the loser finds
 * the time moved on (or the row decided) and writes nothing. That needs `to`'s next nudge
 * time to be later than `from`'s (or none): nudges due at the same moment fire in one
 * advance (`nudgesAt` in core/nudges.ts), with one audit entry each.
 */
export interface NudgeAdvance {
  /** When it fired (ISO-8601): the audit entries' time. */
  at: string;
  from: RequestNudges;
  to: RequestNudges;
  /** Set with an escalation: the role that may now decide it too (ApprovalRequest.escalatedTo). */
  escalatedTo?: string;
}

/**
 * Take (`claim` set) or give back (`claim` null) a request, as `by`, at `at` (ISO-8601).
 * Taking holds when the row is pending and unexpired at `at` and nobody else's claim holds at
 * `at` (a lapsed claim is free; the holder may renew); giving back when `by` holds it.
 * `at` and `claim.until` are on the store's clock (storeNow in src/liveness/store-clock.ts;
 * PostgreSQL: the server's), since a claim written on one host lapses by another's `at`; the
 * store compares the times it is given and reads no clock itself. `at` is also the audit
 * entries' time.
 */
export interface ClaimChange {
  by: string;
  at: string;
  claim: RequestClaim | null;
}

/** What the store watcher's three sweeps would find at a moment (RequestTimers.dueWork). */
export interface DueWork {
  /** A pending request of either kind is at or past its expiry. */
  expiry: boolean;
  /** A pending request's next nudge has come. */
  nudges: boolean;
  /** A session is flagged to be continued (`continue_due`): held, in its grace, or stalled. */
  stalled: boolean;
  /**
   * The soonest expiry or next nudge of any pending request (ISO-8601), or null when none
   * waits. At or before `at` when `expiry` or `nudges` is true. Nothing already stored comes
   * due before it, so a watcher with nothing due now may sleep until then: only a request
   * raised or changed since (which the event bus announces) can come due sooner.
   */
  next: string | null;
}

/** What `alignNudgeTime` changed: the row's stored next nudge time, and the one its nudges give (null: none). */
export interface NudgeTimeChange {
  was: string | null;
  now: string | null;
}

export type RequestClaimResult =
  | { won: true; request: ApprovalRequest }
  | { won: false; request: ApprovalRequest | null };

/**
 * What changes on a waiting request besides its decision: its nudges (reminder, escalation,
 * expiry warning), fired once across every process sharing the store, and who claims it.
 * Every backend (memory, SQLite, PostgreSQL) passes `conformance/timer-cases.ts`; SQL
 * backends keep the next nudge time in a column with a partial index of pending rows.
 * Audit entries commit with a won change only.
 */
export interface RequestTimers {
  /** Pending requests due a nudge at `query.at`, soonest first (an index range, not a scan). */
  listNudgesDue(query: NudgeDueQuery): Promise<ApprovalRequest[]>;
  /**
   * Optional: whether each of the store watcher's sweeps (expiry, nudges, stalled sessions)
   * has anything to do at `at` (ISO-8601), and when the next expiry or nudge comes, in one
   * round trip of three index look-ups on the partial indexes they read. An idle server asks this every pass instead of running the three
   * queries that fetch rows: on SQL stores those ran in cold code every two seconds and made
   * most of an idle server's CPU. It may say true where a sweep then finds nothing (the
   * stalled flag ignores leases and agents), never false where one would find something.
   */
  dueWork?(at: string): Promise<DueWork>;
  /**
   * Optional, for a backend that keeps the next nudge time in a column of its own (the SQL
   * stores): puts a pending row's column back to what its nudges give (`nextNudgeAt`) when
   * it holds something else, and says what it held; null when it was in step or the row is
   * not pending. A row edited to hold text that is no time (or another time) sorting as due
   * comes first in the due-query on every pass while advanceNudge's compare-and-set on that
   * column never holds; a page of such rows kept every valid nudge behind them from going
   * out. The nudge sweep (fire-nudges.ts) calls it for each due row it could not move.
   */
  alignNudgeTime?(id: string): Promise<NudgeTimeChange | null>;
  /** The compare-and-set that fires one nudge; the row as it now stands when it won, else null. */
  advanceNudge(id: string, advance: NudgeAdvance, audit?: AuditEvent[]): Promise<ApprovalRequest | null>;
  /** The compare-and-set of claims; the loser gets the row as it stands. */
  changeClaim(id: string, change: ClaimChange, audit?: AuditEvent[]): Promise<RequestClaimResult>;
}
