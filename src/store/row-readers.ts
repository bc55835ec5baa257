import type {
  ApprovalRequest,
  ApprovalStatus,
  Decision,
  RequestClaim,
  RequestKind,
  RequestNudges,
} from '../core/approval.ts';
import { AUDIT_KEY_DESTROYED, type AuditEntry } from '../core/audit.ts';
import { canonicalJson } from '../core/canonical-json.ts';
import { CorruptDataError } from '../core/errors/corrupt-data-error.ts';
import type { ExecutionRecord, ExecutionStatus } from '../core/execution.ts';
import type { JsonValue } from '../core/json.ts';
import type { Message, StoredMessage } from '../core/messages.ts';
import { readNudges } from '../core/nudges.ts';
import type { OpenBatch, SessionRecord } from '../core/session.ts';
import { isErased } from '../crypto/erased.ts';
import { decodeText, type PayloadCodec } from './codec.ts';
import type { StandingRule } from './store.ts';

export type Row = Record<string, unknown>;

/**
 * Column readers shared by the SQL backends: a value of the wrong type means the row was
 * edited or damaged, and the error names the row so a person can find it.
 */
function wrong(where: string, column: string, value: unknown): CorruptDataError {
  return new CorruptDataError(`Stored data at ${where} has an unexpected ${column} (${typeof value}).`, {
    hint: 'Restore the store from a backup or remove the damaged row; nothing was changed.',
  });
}

export function text(row: Row, column: string, where: string): string {
  const value = row[column];
  if (typeof value !== 'string') throw wrong(where, column, value);
  return value;
}

export function textOrNull(row: Row, column: string, where: string): string | null {
  const value = row[column];
  if (value === null) return null;
  if (typeof value !== 'string') throw wrong(where, column, value);
  return value;
}

/** SQLite hands back numbers; pg hands back bigint columns as decimal strings (all 64 bits). */
export function int(row: Row, column: string, where: string): number {
  const value = row[column];
  const parsed = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
  if (typeof parsed !== 'number' || !Number.isSafeInteger(parsed)) throw wrong(where, column, value);
  return parsed;
}

export function hex(row: Row, column: string, where: string): string {
  const value = row[column];
  if (!(value instanceof Uint8Array)) throw wrong(where, column, value);
  return Buffer.from(value).toString('hex');
}

export function oneOf<T extends string>(row: Row, column: string, where: string, allowed: readonly T[]): T {
  const value = text(row, column, where);
  if (!(allowed as readonly string[]).includes(value)) throw wrong(where, column, value);
  return value as T;
}

export function payload(codec: PayloadCodec, row: Row, column: string, where: string): unknown {
  return codec.decode(text(row, column, where), `${where}.${column}`);
}

function payloadOrNull(codec: PayloadCodec, row: Row, column: string, where: string): unknown {
  const raw = textOrNull(row, column, where);
  return raw === null ? null : codec.decode(raw, `${where}.${column}`);
}

const approvalStatuses: readonly ApprovalStatus[] = [
  'pending',
  'approved',
  'rejected',
  'answered',
  'expired',
];
const requestKinds: readonly RequestKind[] = ['tool-call', 'port'];
const executionStatuses: readonly ExecutionStatus[] = ['started', 'succeeded', 'failed', 'unknown'];

export function toSession(codec: PayloadCodec, row: Row): SessionRecord {
  const where = `sessions(id=${String(row.id)})`;
  return {
    id: text(row, 'id', where),
    agent: text(row, 'agent', where),
    principal: textOrNull(row, 'principal', where),
    createdAt: text(row, 'created_at', where),
    updatedAt: text(row, 'updated_at', where),
    messageCount: int(row, 'message_count', where),
    batch: payloadOrNull(codec, row, 'batch', where) as OpenBatch | null,
  };
}

export function toMessage(codec: PayloadCodec, row: Row, session = String(row.session)): StoredMessage {
  const where = `messages(session=${session}, seq=${String(row.seq)})`;
  return {
    seq: int(row, 'seq', where),
    at: text(row, 'at', where),
    message: payload(codec, row, 'body', where) as Message,
  };
}

/** A session's messages in seq order. */
export function toMessages(codec: PayloadCodec, rows: readonly Row[], session: string): StoredMessage[] {
  return rows.map((row) => toMessage(codec, row, session));
}

export function toApproval(codec: PayloadCodec, row: Row): ApprovalRequest {
  const where = `approvals(id=${String(row.id)})`;
  const args = payload(codec, row, 'args_json', where) as JsonValue;
  return {
    id: text(row, 'id', where),
    session: text(row, 'session', where),
    agent: text(row, 'agent', where),
    callId: text(row, 'call_id', where),
    tool: text(row, 'tool', where),
    args,
    argsJson: canonicalJson(args),
    argsHash: text(row, 'args_hash', where),
    effect: decodeText(codec, text(row, 'effect', where), `${where}.effect`),
    createdAt: text(row, 'created_at', where),
    expiresAt: text(row, 'expires_at', where),
    status: oneOf(row, 'status', where, approvalStatuses),
    decision: payloadOrNull(codec, row, 'decision', where) as Decision | null,
    raisedBy: textOrNull(row, 'raised_by', where),
    kind: oneOf(row, 'kind', where, requestKinds),
    run: textOrNull(row, 'run', where),
    customer: textOrNull(row, 'customer', where),
    requiredRole: textOrNull(row, 'required_role', where),
    claim: claimOf(row, where),
    escalatedTo: textOrNull(row, 'escalated_to', where),
    nudges: nudgesOf(row, where),
    effectHash: textOrNull(row, 'effect_hash', where),
    editable: stringList(row, 'editable', where),
    approvalsNeeded: int(row, 'approvals_needed', where),
    approvals: (payloadOrNull(codec, row, 'partial_approvals', where) ?? []) as ApprovalRequest['approvals'],
    edit: payloadOrNull(codec, row, 'pending_edit', where) as ApprovalRequest['edit'],
    revision: int(row, 'revision', where),
  };
}

/** A JSON array of names kept as plain text (the editable fields: names, not data). */
function stringList(row: Row, column: string, where: string): string[] {
  const raw = text(row, column, where);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw wrong(where, column, raw);
  }
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string'))
    throw wrong(where, column, raw);
  return value;
}

function claimOf(row: Row, where: string): RequestClaim | null {
  const by = textOrNull(row, 'claim_by', where);
  const until = textOrNull(row, 'claim_until', where);
  return by === null || until === null ? null : { by, until };
}

/** The nudges column: JSON of RequestNudges (core/nudges.ts reads it). */
export function nudgesOf(row: Row, where: string): RequestNudges | null {
  const raw = textOrNull(row, 'nudges', where);
  if (raw === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw wrong(where, 'nudges', raw);
  }
  const nudges = readNudges(parsed);
  if (nudges === undefined) throw wrong(where, 'nudges', raw);
  return nudges;
}

export function toExecution(codec: PayloadCodec, row: Row): ExecutionRecord {
  const where = `executions(request_id=${String(row.request_id)})`;
  return {
    requestId: text(row, 'request_id', where),
    session: text(row, 'session', where),
    callId: text(row, 'call_id', where),
    tool: text(row, 'tool', where),
    args: payload(codec, row, 'args', where) as JsonValue,
    idempotencyKey: text(row, 'idempotency_key', where),
    status: oneOf(row, 'status', where, executionStatuses),
    result: payloadOrNull(codec, row, 'result', where) as JsonValue | null,
    attempts: int(row, 'attempts', where),
    startedAt: text(row, 'started_at', where),
    finishedAt: textOrNull(row, 'finished_at', where),
  };
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$/;

/**
 * An erased entry's data is gone: nothing to decode. Data sealed with a data key that was
 * destroyed (encryption on) in a row erasure did not rewrite (its session and request were
 * removed by retention before) decodes as the erased marker: it reads as erased too.
 */
function auditData(
  codec: PayloadCodec,
  row: Row,
  where: string,
  erasedAt: string | null,
): Pick<AuditEntry, 'data' | 'erasedAt'> {
  if (erasedAt !== null) return { data: {}, erasedAt };
  const data = payload(codec, row, 'data', where);
  if (isErased(data)) return { data: {}, erasedAt: AUDIT_KEY_DESTROYED };
  return { data: data as AuditEntry['data'] };
}

export function toAuditEntry(codec: PayloadCodec, row: Row): AuditEntry {
  const where = `audit(seq=${String(row.seq)})`;
  // Both null on entries written before entry hashing version 2 (migration 11).
  const dataHash =
    row.data_hash === null || row.data_hash === undefined ? null : hex(row, 'data_hash', where);
  const erasedAt = textOrNull(row, 'erased_at', where);
  // Only a time is stored (AUDIT_KEY_DESTROYED is what the reader says, never a stored value):
  // anything else is an edit, refused as damage rather than shown as an erasure.
  if (erasedAt !== null && !ISO_INSTANT.test(erasedAt)) throw wrong(where, 'erased_at', erasedAt);
  return {
    seq: int(row, 'seq', where),
    at: text(row, 'at', where),
    // Not checked against the list of kinds: an unknown kind is for verifyAuditChain to judge.
    kind: text(row, 'kind', where),
    session: textOrNull(row, 'session', where),
    requestId: textOrNull(row, 'request_id', where),
    actor: text(row, 'actor', where),
    ...auditData(codec, row, where, erasedAt),
    ...(dataHash === null ? {} : { dataHash }),
    prevHash: hex(row, 'prev_hash', where),
    hash: hex(row, 'hash', where),
  };
}

export function toRule(row: Row): StandingRule {
  const where = `rules(id=${String(row.id)})`;
  return {
    id: text(row, 'id', where),
    session: text(row, 'session', where),
    tool: text(row, 'tool', where),
    toolIdentity: text(row, 'tool_identity', where),
    argsHash: textOrNull(row, 'args_hash', where),
    sourceRequest: text(row, 'source_request', where),
    createdAt: text(row, 'created_at', where),
    createdBy: text(row, 'created_by', where),
    revokedAt: textOrNull(row, 'revoked_at', where),
    revokedBy: textOrNull(row, 'revoked_by', where),
  };
}

export function toStateValue(codec: PayloadCodec, row: Row, namespace: string, key: string): JsonValue {
  return payload(codec, row, 'value', `state(namespace=${namespace}, key=${key})`) as JsonValue;
}
