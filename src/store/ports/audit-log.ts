import type { AuditEntry, AuditEvent } from '../../core/audit.ts';

/**
 * A cursor read of the audit log. Entries come in ascending `seq`; `afterSeq` is exclusive
 * (the seq of the last entry the reader already has; 0 or absent for the beginning) and
 * `limit` caps the page. A reader that follows the log keeps the last seq it saw and asks for
 * what comes after it: SQL backends answer from the primary key on seq, never a full scan.
 */
export interface AuditQuery {
  session?: string;
  afterSeq?: number;
  limit?: number;
}

/**
 * The hash-chained audit trail, which is also the durable event log: every state change
 * appends its entries in its own transaction, and webhooks, live views and replays read them
 * back by cursor (docs/architecture.md, "The audit log is the event log").
 *
 * Seq order is commit order: the store assigns seq, prevHash and hash inside the write while
 * holding the chain's tail (SQLite: the one writer; PostgreSQL: `audit_head … FOR UPDATE`
 * until COMMIT), so a reader that has seen seq N never sees a later commit with a smaller seq.
 */
export interface AuditLog {
  appendAudit(events: AuditEvent[], at: string): Promise<void>;
  listAudit(query?: AuditQuery): Promise<AuditEntry[]>;
  /** The seq of the newest entry, 0 for an empty log: where a follower that wants no history starts. */
  lastAuditSeq(): Promise<number>;
}
