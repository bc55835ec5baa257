import type { ApprovalRequest } from '../../core/approval.ts';
import type { AuditEvent } from '../../core/audit.ts';

/** What erasing one customer removed (or, for audit entries, erased in place), by kind. */
export interface ErasureCounts {
  sessions: number;
  messages: number;
  requests: number;
  executions: number;
  runs: number;
  checkpoints: number;
  auditEntries: number;
  deliveries: number;
}

export interface PrincipalErasureInput {
  principal: string;
  at: string;
  /**
   * The erasure's own trail, given what was removed: its entries commit with the erasure,
   * after the entries it erased (return none when there was nothing to erase).
   */
  audit?: (counts: ErasureCounts) => AuditEvent[];
}

/**
 * Erasing one customer (principal): their sessions and everything written for them. The
 * store finds it by the principal of sessions and the customer of requests (and the runs
 * those requests belong to), and in one transaction deletes the sessions with their
 * messages, rules and ledger rows, the requests with their ledger rows and outbox rows, the
 * runs with their checkpoints, and erases the data of every audit entry of those sessions,
 * runs and requests in place (the chain still verifies: entry hashing version 2).
 *
 * Pending requests are the caller's to expire first, through `decide` (src/erasure/): a
 * request is never removed while it could still be approved.
 */
export interface PrincipalErasure {
  /** Pending requests naming the principal as customer, oldest first (both kinds). */
  listPendingOf(principal: string): Promise<ApprovalRequest[]>;
  /**
   * The workflow runs `erasePrincipal` would remove for the principal as things stand: those
   * started for them and those that raised a request of theirs, pending or decided (found
   * as `erasePrincipal` finds them). Erasure records them before it removes anything, so
   * that once their rows are gone it can still destroy their keys (src/erasure/).
   */
  runsToErase(principal: string): Promise<string[]>;
  erasePrincipal(input: PrincipalErasureInput): Promise<ErasureCounts>;
}

/** ISO-8601 instants: what finished (or was decided, or written) before one goes. */
export interface RetentionCutoffs {
  sessions?: string;
  runs?: string;
  requests?: string;
  audit?: string;
}

export interface PurgeBatch {
  before: RetentionCutoffs;
  /** At most this many of each kind per call (ignored by a dry run, which counts them all). */
  limit: number;
  /** When audit data is erased, and which leases count as lapsed (`nowMs`). */
  at: string;
  nowMs: number;
  /** Count what would go; change nothing. */
  dryRun?: boolean;
  /**
   * The batch's own trail, given what it removed: committed in the batch's transaction, so
   * audit data is never erased without the entry that accounts for it (a store without a
   * trail ignores it; return none when nothing went).
   */
  audit?: (counts: PurgeCounts) => AuditEvent[];
}

/** Removed (or, for audit entries, erased in place) by one batch; with `dryRun`, what would be. */
export interface PurgeCounts {
  sessions: number;
  runs: number;
  requests: number;
  auditEntries: number;
}

/**
 * Retention: removing what is past its period, never what waits. A session goes once it
 * has no open batch (so no pending request), no live lease, and was last written before its
 * cutoff, with its messages, rules, requests and ledger rows; a run once it ended
 * (completed, failed, expired), with its checkpoints and requests; a request once decided,
 * unless its session still has an open batch or its run still waits; an audit entry has its
 * data erased in place (never a `principal.erased` or `retention.purged` entry: they account
 * for the erased ones, see verifyAuditChain). Each batch is one transaction of at most `limit` rows per kind, read
 * from partial indexes by age (SQL backends): cost follows what is removed, not what waits.
 */
export interface Retention {
  purgeBatch(batch: PurgeBatch): Promise<PurgeCounts>;
}
