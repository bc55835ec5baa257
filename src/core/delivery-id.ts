import { sha256Hex } from './canonical-json.ts';

/** The webhook events that become outbox rows (src/server/webhooks/). */
export type DeliveredEventType =
  | 'approval.requested'
  | 'approval.decided'
  | 'request.reminder'
  | 'request.escalated'
  | 'request.expiring';

const DELIVERED: readonly DeliveredEventType[] = [
  'approval.requested',
  'approval.decided',
  'request.reminder',
  'request.escalated',
  'request.expiring',
];

/**
 * The delivery id of an event: `evt_` and the first 24 hex digits of SHA-256 over
 * `type:requestId`. Every process computes the same one, so the outbox keeps one row per
 * event however many instances heard of it, and erasure finds a request's rows by id.
 */
export function deliveryId(type: DeliveredEventType, requestId: string): string {
  return `evt_${sha256Hex(`${type}:${requestId}`).slice(0, 24)}`;
}

/** Every outbox row a request can have: what erasing the request removes. */
export function deliveryIdsOf(requestId: string): string[] {
  return DELIVERED.map((type) => deliveryId(type, requestId));
}
