import type { ApprovalRequest, ApprovalStatus, Decision, RequestKind } from '../core/approval.ts';
import type { AuditEntry, AuditEvent } from '../core/audit.ts';
import type { ExecutionRecord, ExecutionStatus } from '../core/execution.ts';
import type { JsonValue } from '../core/json.ts';
import type { Message, StoredMessage } from '../core/messages.ts';
import type { OpenBatch, SessionRecord } from '../core/session.ts';
import type { DueQuery } from './ports/request-book.ts';

/**
 * Everything one step of a run writes, committed in one transaction. The write is
 * proportional to the step (new messages, new requests), never to the whole history.
 */
export interface StepCommit {
  session: string;
  /** Fencing: the commit fails with SESSION_BUSY unless this owner still holds the lease. */
  leaseOwner: string;
  /** The session's messageCount this step was computed against (optimistic check). */
  expectedMessageCount: number;
  append: Message[];
  /** `undefined` leaves the open batch as it is; `null` clears it. */
  batch?: OpenBatch | null;
  approvals?: ApprovalRequest[];
  audit?: AuditEvent[];
  /**
   * Ledger results written in the same transaction, before the step: the last approved call
   * of a batch finishes together with the step that hands its result to the model, so
   * neither exists without the other. Each must be `started` or `unknown`, as for
   * `finishExecution`.
   */
  finishes?: Array<ExecutionFinish & { requestId: string }>;
  /** The run ends with this step: the lease is released in the same transaction. */
  releaseLease?: boolean;
  at: string;
}

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

export interface ExecutionStart {
  requestId: string;
  session: string;
  callId: string;
  tool: string;
  args: JsonValue;
  idempotencyKey: string;
  at: string;
}

/** `created` is false when a ledger row for this request already existed (a retry or a crash). */
export interface ExecutionStartResult {
  created: boolean;
  record: ExecutionRecord;
}

export interface ExecutionFinish {
  status: Exclude<ExecutionStatus, 'started'>;
  result: JsonValue | null;
  at: string;
  audit?: AuditEvent[];
}

/**
 * "Always approve" for one session, bound to the tool's identity (name + hash of its schema
 * and description), so a different tool later registered under the same name never matches.
 */
export interface StandingRule {
  id: string;
  session: string;
  tool: string;
  toolIdentity: string;
  /** Set for "this tool with exactly these arguments"; null for "this tool". */
  argsHash: string | null;
  /** The request whose approval created the rule. */
  sourceRequest: string;
  createdAt: string;
  createdBy: string;
  revokedAt: string | null;
  revokedBy: string | null;
}

/** A whole session, as exported and imported between stores. */
export interface SessionSnapshot {
  session: SessionRecord;
  messages: StoredMessage[];
  approvals: ApprovalRequest[];
  executions: ExecutionRecord[];
}

export interface LeaseRequest {
  session: string;
  owner: string;
  untilMs: number;
  nowMs: number;
  /** Take the lease over from this owner even if it has not expired (the owner is known dead). */
  takeOverFrom?: string;
  /**
   * Only extend a lease this owner still holds; never take a free or expired one. Renewals
   * use it, so a renewal that lands after the run released the lease cannot take it back.
   */
  renew?: boolean;
}

export interface LeaseInfo {
  owner: string | null;
  untilMs: number;
}

/**
 * A session whose open batch is fully decided while no run continues it: what a process
 * leaves behind when it dies between committing a decision and continuing the session
 * (inline), or between the decision and enqueueing its continuation (queue mode).
 */
export interface StalledSession {
  id: string;
  agent: string;
  updatedAt: string;
  /** The lease as stored; with `includeHeld` the caller decides whether its holder is gone. */
  lease: LeaseInfo;
}

export interface StalledSessionQuery {
  /** A lease whose term ended before this instant counts as free (as in `acquireLease`). */
  nowMs: number;
  /** At most this many (default 100). */
  limit?: number;
  /**
   * Only sessions of these agents. A process continues only sessions its app has agents
   * for; without this, another app's stalled sessions sharing the store would fill its limit.
   */
  agents?: readonly string[];
  /**
   * Also list sessions whose lease is still within its term. The store cannot tell a live
   * holder from a dead one; a caller that can (a holder on this host whose process is gone)
   * asks for these and filters them itself.
   */
  includeHeld?: boolean;
}

/** Where a delivery in the outbox stands. Only `pending` rows are ever claimed. */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** A new row for the delivery outbox (`enqueueDelivery`). */
export interface DeliveryEnqueue {
  /** Deterministic, derived from what is delivered, so every process computes the same one. */
  id: string;
  /** What is delivered (for a webhook: the event type), for headers and logs. */
  kind: string;
  /** Stored through the PayloadCodec, like every other payload. */
  payload: JsonValue;
  createdAt: string;
  /** Epoch ms from which the row is due. */
  nextAtMs: number;
}

/** A row of the delivery outbox, as stored. */
export interface Delivery {
  id: string;
  kind: string;
  payload: JsonValue;
  createdAt: string;
  status: DeliveryStatus;
  /** Claims so far: every claim counts as one attempt, including one whose holder died. */
  attempts: number;
  /**
   * Epoch ms from which a pending row is due: its retry time, or while claimed, the end of
   * the claim (a claim that is not finished by then lapses and the row is due again).
   */
  nextAtMs: number;
  /** The owner of the latest claim while the row is pending and claimed; null otherwise. */
  claimedBy: string | null;
  lastError: string | null;
  finishedAt: string | null;
}

export interface DeliveryClaim {
  nowMs: number;
  /** At most this many rows. */
  limit: number;
  /** How long the claim holds: from `nowMs + leaseMs` on, the row is due again. */
  leaseMs: number;
  owner: string;
}

/** How a claimed delivery ended (`finishDelivery`). */
export type DeliveryOutcome =
  | { status: 'delivered'; at: string }
  | { status: 'retry'; nextAtMs: number; error: string }
  | { status: 'failed'; at: string; error: string };

/**
 * An inbox sign-in as stored. The cookie value itself is never stored, only its SHA-256, so
 * a copy of the database hands out no live cookies. Neither are the approver's roles: the
 * server looks the name up in its current approver configuration on every request.
 */
export interface WebSessionRecord {
  /** SHA-256 of the cookie value, lowercase hex (64 characters). */
  idHash: string;
  /** The approver's name, as configured when they signed in. */
  approver: string;
  createdAt: string;
  /** Epoch ms at which the sign-in ends unless a request slides it forward. */
  expiresAtMs: number;
}

/**
 * The one persistence port. Every backend (memory, SQLite, later Postgres) implements it
 * and passes the shared conformance suite in `conformance/`.
 */
export interface Store {
  readonly kind: string;

  // sessions and messages
  /** Creates the session if absent; returns the stored record either way. */
  ensureSession(input: {
    id: string;
    agent: string;
    principal: string | null;
    at: string;
  }): Promise<SessionRecord>;
  getSession(id: string): Promise<SessionRecord | null>;
  listSessions(): Promise<SessionRecord[]>;
  loadMessages(session: string): Promise<StoredMessage[]>;
  commitStep(step: StepCommit): Promise<SessionRecord>;
  /**
   * Sessions stalled after a decision, oldest `updatedAt` first (then by id): the session has
   * an open batch, none of its requests is `pending`, its lease is free or lapsed (unless
   * `includeHeld`), and no ledger row of it is `unknown` (that waits for a person's
   * reconcile, not for a sweep). Continuing one is an ordinary `resume`. Cheap enough to
   * poll: SQL backends walk a partial index of sessions with an open batch.
   */
  listStalledSessions(query: StalledSessionQuery): Promise<StalledSession[]>;

  // one run per session at a time
  acquireLease(request: LeaseRequest): Promise<boolean>;
  releaseLease(session: string, owner: string): Promise<void>;
  getLease(session: string): Promise<LeaseInfo | null>;

  // requests (tool calls and port requests; see ports/request-book.ts)
  getApproval(id: string): Promise<ApprovalRequest | null>;
  listApprovals(filter?: ApprovalFilter): Promise<ApprovalRequest[]>;
  /** Pending requests due to expire (see RequestBook.listDue). */
  listDue(query: DueQuery): Promise<ApprovalRequest[]>;
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

  // execution ledger
  startExecution(start: ExecutionStart, audit?: AuditEvent[]): Promise<ExecutionStartResult>;
  /** Marks a started (or unknown) execution as finished. Returns the updated record. */
  finishExecution(requestId: string, finish: ExecutionFinish): Promise<ExecutionRecord>;
  getExecution(requestId: string): Promise<ExecutionRecord | null>;
  listExecutions(filter?: { session?: string; status?: ExecutionStatus }): Promise<ExecutionRecord[]>;

  // audit trail (hash-chained; the store assigns seq, prevHash and hash inside the write)
  appendAudit(events: AuditEvent[], at: string): Promise<void>;
  listAudit(filter?: { session?: string }): Promise<AuditEntry[]>;

  // application state of the tools (e.g. the bookstore's orders), namespaced key/value
  getState(namespace: string, key: string): Promise<JsonValue | undefined>;
  setState(namespace: string, key: string, value: JsonValue): Promise<void>;

  // the delivery outbox (webhooks): at-least-once delivery that survives restarts and is
  // shared by every process on the store
  /**
   * Inserts the row if no row has this id (whatever its status); returns whether it was new.
   * Processes that learn of the same event all enqueue it under the same id, and exactly
   * one row results.
   */
  enqueueDelivery(delivery: DeliveryEnqueue): Promise<boolean>;
  /**
   * Atomically claims up to `limit` due rows for `owner`: `pending`, with `nextAtMs <= nowMs`
   * (never claimed, due for a retry, or a claim that lapsed), oldest `createdAt` first (then
   * by id). Each claimed row gets `claimedBy = owner`, `nextAtMs = nowMs + leaseMs` and one
   * more attempt. Two claims, from any processes, never hold the same row at once
   * (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite: one write transaction).
   */
  claimDeliveries(claim: DeliveryClaim): Promise<Delivery[]>;
  /**
   * Records the outcome of `owner`'s claim: delivered and failed are final (never claimed
   * again); retry clears the claim and makes the row due at `nextAtMs`. Applies only while
   * the row is pending and its latest claim is `owner`'s; returns whether it applied (false
   * when the claim lapsed and another owner took the row, or the row is unknown or final).
   */
  finishDelivery(id: string, owner: string, outcome: DeliveryOutcome): Promise<boolean>;
  getDelivery(id: string): Promise<Delivery | null>;

  // inbox sign-ins (web sessions), shared by every server instance on the store
  /**
   * Stores a new sign-in. In the same write, deletes every sign-in that expired at `nowMs`
   * (`expiresAtMs <= nowMs`), so expired rows never pile up (SQL backends use an index on
   * the expiry). An existing row with the same `idHash` is replaced (it cannot happen with
   * random cookie values; it makes a retried write harmless).
   */
  createWebSession(session: WebSessionRecord, nowMs: number): Promise<void>;
  /** The sign-in with this hash if it is still live at `nowMs` (`expiresAtMs > nowMs`), else null. A read only. */
  getWebSession(idHash: string, nowMs: number): Promise<WebSessionRecord | null>;
  /**
   * Sliding expiry: if the sign-in is live at `nowMs`, moves its expiry to `expiresAtMs`
   * (never backwards) and returns it as stored now; an expired or unknown one is null and
   * is left for the pruning in `createWebSession`.
   */
  touchWebSession(
    idHash: string,
    update: { nowMs: number; expiresAtMs: number },
  ): Promise<WebSessionRecord | null>;
  /** Signs out: deletes the sign-in (for every instance on the store); whether a row was there. */
  deleteWebSession(idHash: string): Promise<boolean>;

  // moving sessions between stores
  exportSession(id: string): Promise<SessionSnapshot | null>;
  /** Fails with INVALID_INPUT if the session id already exists in this store. */
  importSession(snapshot: SessionSnapshot, audit?: AuditEvent[]): Promise<void>;

  close(): Promise<void>;
}
