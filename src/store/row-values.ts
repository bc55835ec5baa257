import type { ApprovalRequest } from '../core/approval.ts';
import { nextNudgeAt } from '../core/nudges.ts';
import { requestScope } from '../crypto/scopes.ts';
import { encodeText, type PayloadCodec } from './codec.ts';

/**
 * An approval's column values in APPROVAL_COLUMNS order, for both SQL backends. Encoding the
 * parsed argsJson (not `args`) keeps its sorted key order: with the JSON codec the column
 * holds exactly the text that was shown and hashed.
 */
export function approvalValues(codec: PayloadCodec, request: ApprovalRequest): Array<string | number | null> {
  const scope = requestScope(request);
  return [
    request.id,
    request.session,
    request.agent,
    request.callId,
    request.tool,
    codec.encode(JSON.parse(request.argsJson), scope),
    request.argsHash,
    encodeText(codec, request.effect, scope),
    request.createdAt,
    request.expiresAt,
    request.status,
    request.decision === null ? null : codec.encode(request.decision, scope),
    request.raisedBy,
    request.kind,
    request.run,
    request.customer,
    request.requiredRole,
    request.claim?.by ?? null,
    request.claim?.until ?? null,
    request.escalatedTo,
    request.nudges === null ? null : JSON.stringify(request.nudges),
    nextNudgeAt(request.nudges),
    request.effectHash,
    JSON.stringify(request.editable),
    request.approvalsNeeded,
    request.approvals.length === 0 ? null : codec.encode(request.approvals, scope),
    request.edit === null ? null : codec.encode(request.edit, scope),
    request.revision,
  ];
}

/** DECIDED_COLUMNS' values: null while a request waits. */
export function decidedValues(request: Pick<ApprovalRequest, 'decision'>): Array<string | null> {
  const { decision } = request;
  return decision === null ? [null, null, null] : [decision.at, decision.by, decision.kind];
}
