import type { AuditEntry, AuditEvent } from '../../core/audit.ts';

/** The audit trail, hash-chained: the store assigns seq, prevHash and hash inside the write. */
export interface AuditLog {
  appendAudit(events: AuditEvent[], at: string): Promise<void>;
  listAudit(filter?: { session?: string }): Promise<AuditEntry[]>;
}
