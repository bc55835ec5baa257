import type { ApprovalRequest, Decision, RequestKind } from '../../core/approval.ts';
import type { AuditEvent } from '../../core/audit.ts';
import type { ApprovalFilter, DecideOptions, DecideResult, StandingRule } from '../store.ts';

/** Pending requests whose expiry has come, for the one expiry sweep (both kinds). */
export interface DueQuery {
  /** ISO-8601: requests with `expiresAt <= at` are due. */
  at: string;
  /** At most this many, soonest expiry first (then by id). */
  limit: number;
  /** Only this kind; both when absent. */
  kind?: RequestKind;
}

/**
 * Where requests waiting for a person live: a model's tool calls and a workflow's port
 * requests, one kind of row. Raising a request is part of the write that raises it (a step's
 * commit, a checkpoint's save); after that a row changes once, by `decide`. Every backend
 * (memory, SQLite, PostgreSQL, the file checkpoint store) passes the approval conformance
 * cases in `conformance/approval-cases.ts`.
 */
export interface RequestBook {
  getApproval(id: string): Promise<ApprovalRequest | null>;
  /** Oldest first (then by id). */
  listApprovals(filter?: ApprovalFilter): Promise<ApprovalRequest[]>;
  /**
   * Pending requests due to expire at `query.at`, soonest first: what the expiry sweep reads
   * instead of every pending row. SQL backends serve it from a partial index on `expires_at`
   * of pending rows.
   */
  listDue(query: DueQuery): Promise<ApprovalRequest[]>;
  /**
   * The one compare-and-set: pending → decision.verdict, once, and for a person's verdict
   * (approved, rejected, answered) only before the request's expiry at `decision.at`. The
   * loser gets the row as it stands (the winner's decision). Audit events commit with a won
   * decision only. `options` (a standing rule, the session's lease) apply to tool calls; a
   * store that keeps only port requests ignores them.
   */
  decide(
    id: string,
    decision: Decision,
    audit?: AuditEvent[],
    options?: DecideOptions,
  ): Promise<DecideResult>;
}

/** "Always approve" for one session (tool calls only). */
export interface RuleBook {
  /** Rules of a session (or all), oldest first; revoked ones only when asked for. */
  listRules(filter?: { session?: string; includeRevoked?: boolean }): Promise<StandingRule[]>;
  getRule(id: string): Promise<StandingRule | null>;
  /** Marks the rule revoked (once); returns it, or null when there is no such rule. */
  revokeRule(id: string, by: string, at: string, audit?: AuditEvent[]): Promise<StandingRule | null>;
}
