import type { ApprovalRequest } from '../core/approval.ts';
import type { AuditEvent } from '../core/audit.ts';

/** The `request.expired` entry of a port request (the runner's expiry, and erasure's). */
export function portExpiryEvent(row: ApprovalRequest): AuditEvent<'request.expired'> {
  return {
    kind: 'request.expired',
    session: row.session,
    requestId: row.id,
    actor: 'countersign',
    data: {
      kind: 'port',
      run: row.run ?? row.session,
      workflow: row.agent,
      port: row.tool,
      expiresAt: row.expiresAt,
    },
  };
}
