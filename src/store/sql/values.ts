import type { ExecutionRecord } from '../../core/execution.ts';
import type { SessionRecord } from '../../core/session.ts';
import type { StandingRule } from '../../core/standing-rule.ts';
import { sessionScope } from '../../crypto/scopes.ts';
import type { PayloadCodec } from '../codec.ts';

// Column values in the order of sql/columns.ts, for the INSERTs of both SQL backends
// (the approval's are in ../row-values.ts).

export function sessionValues(codec: PayloadCodec, session: SessionRecord): Array<string | number | null> {
  return [
    session.id,
    session.agent,
    session.principal,
    session.createdAt,
    session.updatedAt,
    session.messageCount,
    session.batch === null ? null : codec.encode(session.batch, sessionScope(session.id)),
  ];
}

export function executionValues(codec: PayloadCodec, record: ExecutionRecord): Array<string | number | null> {
  return [
    record.requestId,
    record.session,
    record.callId,
    record.tool,
    codec.encode(record.args, sessionScope(record.session)),
    record.idempotencyKey,
    record.status,
    record.result === null ? null : codec.encode(record.result, sessionScope(record.session)),
    record.attempts,
    record.startedAt,
    record.finishedAt,
  ];
}

export function ruleValues(rule: StandingRule): Array<string | null> {
  return [
    rule.id,
    rule.session,
    rule.tool,
    rule.toolIdentity,
    rule.argsHash,
    rule.sourceRequest,
    rule.createdAt,
    rule.createdBy,
    rule.revokedAt,
    rule.revokedBy,
  ];
}
