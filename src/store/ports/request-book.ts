import type {
  Approval,
  ApprovalRequest,
  ApprovalStatus,
  Decision,
  RequestEdit,
  RequestKind,
} from '../../core/approval.ts';
import type { AuditEvent } from '../../core/audit.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import type { StoredMessage } from '../../core/messages.ts';
import type { SessionRecord } from '../../core/session.ts';
import type { StandingRule } from '../../core/standing-rule.ts';
import type { DecisionStatsPort } from './decision-stats.ts';
import type { LeaseRequest } from './leases.ts';

export interface ApprovalFilter {
  status?: ApprovalStatus;
  session?: string;
  tool?: string;
  kind?: RequestKind;
  /** Requests of this workflow run (its port requests and its agents' tool calls). */
  run?: string;
}

/**
 * Result of the decision compare-and-set: either we won, or here is what is there. `leased`
 * says whether the session's lease was taken with the decision (see DecideOptions.lease).
 */
export type DecideResult =
  | { won: true; request: ApprovalRequest; leased: boolean; run?: RunStart }
  | { won: false; request: ApprovalRequest | null };

/** A request and its session, as `getApprovalWithSession` reads them. */
export interface ApprovalWithSession {
  request: ApprovalRequest;
  session: SessionRecord | null;
}

/** What the run that continues a session reads first, read by the decision that leased it. */
export interface RunStart {
  /** The session's messages, in order, as `loadMessages` returns them. */
  messages: StoredMessage[];
  /** The decided request's ledger row (null: the call has not started). */
  execution: ExecutionRecord | null;
}

export interface DecideOptions {
  /** Created in the same transaction as the decision, and only if the decision won. */
  rule?: StandingRule;
  /**
   * If the decision wins, take the request's session lease in the same transaction when it
   * is free (as `acquireLease` would), so the run that follows starts without another
   * write. A busy lease does not stop the decision: `leased` is false and the caller waits.
   */
  lease?: Pick<LeaseRequest, 'owner' | 'untilMs' | 'nowMs'>;
  /**
   * With `lease`: when the lease was taken, also hand back `run`, what the run that follows
   * reads first (the session's messages, the request's ledger row), read in the decision's own
   * statement or transaction, so that run starts without another round trip. The lease makes
   * them current: no other run can commit to the session while it is held. A store may leave
   * `run` out; the caller then reads them.
   */
  loadRun?: boolean;
}

/**
 * A partial approval (one of a quorum, not the last), or an edit that re-routes the request
 * (a higher role, more approvers): what `recordApproval` writes, whole.
 */
export interface ApprovalUpdate {
  /** The row's `revision` as read: the update wins only while the row is still at it. */
  revision: number;
  /** ISO-8601: refused at or after the request's expiry, as a person's decision is. */
  at: string;
  /** Every approval after this one, oldest first (an edit restarts the count). */
  approvals: Approval[];
  /** The edited call the approvals are for; null for the call as proposed. */
  edit: RequestEdit | null;
  requiredRole: string | null;
  approvalsNeeded: number;
}

/** Result of recordApproval's compare-and-set: won (the row after), or the row as it stands. */
export type ApprovalUpdateResult =
  | { won: true; request: ApprovalRequest }
  | { won: false; request: ApprovalRequest | null };

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
 * The orders a page of requests can come in; each is a keyset over one index, so page 1,000
 * costs what page 1 does. `expiring` lists only pending requests (soonest expiry first);
 * `decided` only decided ones (most recently decided first, what a history shows).
 */
export type RequestSort = 'oldest' | 'newest' | 'expiring' | 'decided';

/**
 * One page of requests. Exact filters (`status`, `kind`, `session`, `run`, `role`) compare
 * the column; `tool`, `customer` and `text` (over the effect and the customer) are
 * case-insensitive partial matches. `after` is the `next` cursor of the page before, for the
 * same sort and the same filters (not `limit`, `count` or `openAt`); a cursor is opaque, and
 * a malformed one, or one handed out under another sort or other filters, is refused with
 * INVALID_CURSOR.
 */
export interface RequestPageQuery {
  status?: ApprovalStatus;
  kind?: RequestKind;
  session?: string;
  run?: string;
  role?: string;
  tool?: string;
  customer?: string;
  text?: string;
  /** `oldest` when absent. */
  sort?: RequestSort;
  after?: string;
  /** 1 to MAX_PAGE_LIMIT (500). */
  limit: number;
  /**
   * Leave out requests still pending at or past their expiry at this instant (ISO-8601): they
   * are expired, only not swept yet, so a list of what waits must not offer them.
   */
  openAt?: string;
  /** Count the matches too (capped at PAGE_COUNT_CAP, see RequestPage.total). Default false. */
  count?: boolean;
}

/**
 * How many requests match, counted up to a cap so the count stays cheap however many wait:
 * `exact` false means "at least `count`" (the inbox shows "1,000+").
 */
export interface PageTotal {
  count: number;
  exact: boolean;
}

export interface RequestPage {
  items: ApprovalRequest[];
  /** Pass as `after` for the next page; null on the last page. */
  next: string | null;
  /** Present when the query asked for `count`. */
  total?: PageTotal;
}

/**
 * Where requests waiting for a person live: a model's tool calls and a workflow's port
 * requests, one kind of row. Raising a request is part of the write that raises it (a step's
 * commit, a checkpoint's save); after that a row changes once, by `decide`. Every backend
 * (memory, SQLite, PostgreSQL, the file checkpoint store) passes the approval conformance
 * cases in `conformance/approval-cases.ts`.
 */
export interface RequestBook extends DecisionStatsPort {
  getApproval(id: string): Promise<ApprovalRequest | null>;
  /**
   * The request and the session it was raised in, read together (one statement on
   * PostgreSQL): what deciding a tool call looks at first, the row and the session whose
   * principal may not decide it. `session` is null when the session is gone or this book
   * keeps none. Optional: without it, the two are read apart.
   */
  getApprovalWithSession?(id: string): Promise<ApprovalWithSession | null>;
  /** Oldest first (then by id). Every row that matches: for whole exports and tests; surfaces page. */
  listApprovals(filter?: ApprovalFilter): Promise<ApprovalRequest[]>;
  /**
   * One page of matching requests in `query.sort` order, after the cursor `query.after`.
   * SQL backends walk an index in that order (keyset: `(key, id) > (cursor)`), so a page
   * reads about `limit` rows for exact filters, whatever the backlog.
   */
  pageRequests(query: RequestPageQuery): Promise<RequestPage>;
  /**
   * Pending requests due to expire at `query.at`, soonest first: what the expiry sweep reads
   * instead of every pending row. SQL backends serve it from a partial index on `expires_at`
   * of pending rows.
   */
  listDue(query: DueQuery): Promise<ApprovalRequest[]>;
  /**
   * How many requests wait (both kinds), for the server's `/metrics` gauge, read at scrape
   * time. Optional: the SQL backends count from the partial index of pending rows, so a
   * scrape reads the waiting rows' index entries, never the whole table.
   */
  countPending?(): Promise<number>;
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
  /**
   * Records a partial approval or a re-routing edit: one compare-and-set on the row's
   * `revision` (pending, not expired at `update.at`), which it bumps. It never decides: the
   * approval that completes a quorum goes through `decide`. Audit events commit with a won
   * update only. Two approvers racing for the same slot: one wins, the other reads the row
   * again and finds itself the last (or second) approver.
   */
  recordApproval(id: string, update: ApprovalUpdate, audit?: AuditEvent[]): Promise<ApprovalUpdateResult>;
}

/** "Always approve" for one session (tool calls only). */
export interface RuleBook {
  /** Rules of a session (or all), oldest first; revoked ones only when asked for. */
  listRules(filter?: { session?: string; includeRevoked?: boolean }): Promise<StandingRule[]>;
  getRule(id: string): Promise<StandingRule | null>;
  /** Marks the rule revoked (once); returns it, or null when there is no such rule. */
  revokeRule(id: string, by: string, at: string, audit?: AuditEvent[]): Promise<StandingRule | null>;
}
