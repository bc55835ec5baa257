import type { ApprovalRequest } from '../core/approval.ts';
import { requestScope } from '../crypto/scopes.ts';
import { encodeText, type PayloadCodec } from './codec.ts';

/**
 * An approval's column values in APPROVAL_COLUMNS order, for both SQL backends. Encoding the
 * parsed argsJson (not `args`) keeps its sorted key order: with the JSON codec the column
 * holds exactly the text that was shown and hashed.
 */
export function approvalValues(codec: PayloadCodec, request: ApprovalRequest): Array<string | null> {
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
  ];
}
