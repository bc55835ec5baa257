import type { JsonValue } from '../core/json.ts';
import type { AppState } from './ports/app-state.ts';
import type { AuditLog } from './ports/audit-log.ts';
import type { Leases } from './ports/leases.ts';
import type { Ledger } from './ports/ledger.ts';
import type { RequestBook } from './ports/request-book.ts';
import type { SessionLog } from './ports/session-log.ts';
import type { SessionTransfer } from './ports/session-transfer.ts';

// The ports, one concern each, in ./ports/; these re-exports keep existing imports working.
export type { LeaseInfo } from '../core/lease.ts';
export type { SessionSnapshot } from '../core/session-snapshot.ts';
export type { StalledSession } from '../core/stalled-session.ts';
export type { StandingRule } from '../core/standing-rule.ts';
export type { AppState } from './ports/app-state.ts';
export type { AuditLog } from './ports/audit-log.ts';
export type { LeaseRenewal, LeaseRequest, Leases } from './ports/leases.ts';
export type { ExecutionFinish, ExecutionStart, ExecutionStartResult, Ledger } from './ports/ledger.ts';
export type { ApprovalFilter, DecideOptions, DecideResult, RequestBook } from './ports/request-book.ts';
export type { SessionLog, StalledSessionQuery, StepCommit } from './ports/session-log.ts';
export type { SessionTransfer } from './ports/session-transfer.ts';

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
 * The one persistence port, composed of one port per concern (./ports/). Every backend
 * (memory, SQLite, PostgreSQL) implements it and passes the shared conformance suite in
 * `conformance/`.
 */
export interface Store extends SessionLog, Leases, RequestBook, Ledger, AuditLog, AppState, SessionTransfer {
  readonly kind: string;

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

  close(): Promise<void>;
}
