import type { ApprovalRequest } from '../../core/approval.ts';
import type { LeaseInfo } from '../../core/lease.ts';
import type { PayloadCodec } from '../codec.ts';
import type { RunStart } from '../ports/request-book.ts';
import type { Delivery, DeliveryStatus } from '../ports/server/outbox.ts';
import type { WebSessionRecord } from '../ports/server/web-session-store.ts';
import {
  hex,
  int,
  oneOf,
  payload,
  type Row,
  text,
  textOrNull,
  toExecution,
  toMessages,
} from '../row-readers.ts';

// The row mappers both SQL backends use, on the validated readers of ../row-readers.ts: a
// value of the wrong type or an unknown status is CORRUPT_DATA naming the row.
export * from '../row-readers.ts';

/**
 * What a decision that took the lease read for the run (PostgreSQL's decide: the messages as
 * three aggregated arrays, the ledger row as JSON; null arrays when the session has none).
 */
export function toRunStart(codec: PayloadCodec, row: Row, request: ApprovalRequest): RunStart {
  const seqs = (row.run_seqs ?? []) as unknown[];
  const ats = (row.run_ats ?? []) as unknown[];
  const bodies = (row.run_bodies ?? []) as unknown[];
  const rows = seqs.map((seq, i) => ({ seq, at: ats[i], body: bodies[i] }));
  const execution = row.run_execution;
  return {
    messages: toMessages(codec, rows, request.session),
    execution: execution === null || execution === undefined ? null : toExecution(codec, execution as Row),
  };
}

const deliveryStatuses: readonly DeliveryStatus[] = ['pending', 'delivered', 'failed'];

export function toLease(row: Row, session: string): LeaseInfo {
  const where = `sessions(id=${session})`;
  return { owner: textOrNull(row, 'lease_owner', where), untilMs: int(row, 'lease_until', where) };
}

/** What a fenced step is checked against. */
export function toFence(row: Row, session: string): { owner: string | null; messageCount: number } {
  const where = `sessions(id=${session})`;
  return { owner: textOrNull(row, 'lease_owner', where), messageCount: int(row, 'message_count', where) };
}

/** The chain's last link (SQLite: the audit row with the highest seq; PostgreSQL: audit_head). */
export function toAuditLink(row: Row, where: string): { seq: number; hash: string } {
  return { seq: int(row, 'seq', where), hash: hex(row, 'hash', where) };
}

export function toDelivery(codec: PayloadCodec, row: Row): Delivery {
  const where = `deliveries(id=${String(row.id)})`;
  return {
    id: text(row, 'id', where),
    kind: text(row, 'kind', where),
    payload: payload(codec, row, 'payload', where) as Delivery['payload'],
    createdAt: text(row, 'created_at', where),
    status: oneOf(row, 'status', where, deliveryStatuses),
    attempts: int(row, 'attempts', where),
    nextAtMs: int(row, 'next_at', where),
    claimedBy: textOrNull(row, 'claimed_by', where),
    lastError: textOrNull(row, 'last_error', where),
    finishedAt: textOrNull(row, 'finished_at', where),
  };
}

/** Claimed rows come back from RETURNING in no particular order: the claim order is this. */
export function byCreatedThenId(a: Delivery, b: Delivery): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export function toWebSession(row: Row): WebSessionRecord {
  const where = `web_sessions(id_hash=${String(row.id_hash)})`;
  return {
    idHash: text(row, 'id_hash', where),
    approver: text(row, 'approver', where),
    createdAt: text(row, 'created_at', where),
    expiresAtMs: int(row, 'expires_at', where),
  };
}
