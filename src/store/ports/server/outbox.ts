import type { JsonValue } from '../../../core/json.ts';

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
  /** Epoch ms from which the row is due, on the store's clock (see `Outbox`). */
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
  /** Now on the store's clock (see `Outbox`): rows with `nextAtMs <= nowMs` are due. */
  nowMs: number;
  /** At most this many rows. */
  limit: number;
  /** How long the claim holds: from `nowMs + leaseMs` on, the row is due again. */
  leaseMs: number;
  owner: string;
}

/** How a claimed delivery ended (`finishDelivery`); a retry's `nextAtMs` is on the store's clock. */
export type DeliveryOutcome =
  | { status: 'delivered'; at: string }
  | { status: 'retry'; nextAtMs: number; error: string }
  | { status: 'failed'; at: string; error: string };

/**
 * The delivery outbox (webhooks): at-least-once delivery that survives restarts and is shared
 * by every process on the store. A server port, not part of `Store`: an agent backend need not
 * implement it. The built-in stores do (SQLite and PostgreSQL: the `deliveries` table);
 * `createMemoryOutbox` is the process-local one.
 *
 * Its times (`nextAtMs`, `nowMs`) are epoch ms on one clock for every process that shares
 * the outbox, since one process's claim lapses by another's reading of now: the store's
 * (storeNow in src/liveness/store-clock.ts; PostgreSQL: the server's, whatever each host's
 * wall clock says). The outbox compares the times it is given; it reads no clock itself.
 */
export interface Outbox {
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
}

export function isOutbox(value: unknown): value is Outbox {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { claimDeliveries?: unknown }).claimDeliveries === 'function' &&
    typeof (value as { enqueueDelivery?: unknown }).enqueueDelivery === 'function'
  );
}
