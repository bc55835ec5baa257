import type { ApprovalRequest, ApprovalStatus, Decision } from '../../core/approval.ts';
import type { AuditEvent } from '../../core/audit.ts';
import type { StandingRule } from '../../core/standing-rule.ts';
import type { LeaseRequest } from './leases.ts';

export interface ApprovalFilter {
  status?: ApprovalStatus;
  session?: string;
  tool?: string;
}

/**
 * Result of the decision compare-and-set: either we won, or here is what is there. `leased`
 * says whether the session's lease was taken with the decision (see DecideOptions.lease).
 */
export type DecideResult =
  | { won: true; request: ApprovalRequest; leased: boolean }
  | { won: false; request: ApprovalRequest | null };

export interface DecideOptions {
  /** Created in the same transaction as the decision, and only if the decision won. */
  rule?: StandingRule;
  /**
   * If the decision wins, take the request's session lease in the same transaction when it
   * is free (as `acquireLease` would), so the run that follows starts without another
   * write. A busy lease does not stop the decision: `leased` is false and the caller waits.
   */
  lease?: Pick<LeaseRequest, 'owner' | 'untilMs' | 'nowMs'>;
}

/** Requests waiting for a person, their one decision, and the standing rules decisions grant. */
export interface RequestBook {
  // approvals
  getApproval(id: string): Promise<ApprovalRequest | null>;
  listApprovals(filter?: ApprovalFilter): Promise<ApprovalRequest[]>;
  /**
   * The compare-and-set: pending → decision.verdict, only if still pending and, for an
   * approval, not past its expiry at `decision.at`. Audit events commit with it.
   */
  decide(
    id: string,
    decision: Decision,
    audit?: AuditEvent[],
    options?: DecideOptions,
  ): Promise<DecideResult>;

  // standing approvals
  /** Rules of a session (or all), oldest first; revoked ones only when asked for. */
  listRules(filter?: { session?: string; includeRevoked?: boolean }): Promise<StandingRule[]>;
  getRule(id: string): Promise<StandingRule | null>;
  /** Marks the rule revoked (once); returns it, or null when there is no such rule. */
  revokeRule(id: string, by: string, at: string, audit?: AuditEvent[]): Promise<StandingRule | null>;
}
