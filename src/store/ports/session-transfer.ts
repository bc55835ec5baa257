import type { AuditEvent } from '../../core/audit.ts';
import type { SessionSnapshot } from '../../core/session-snapshot.ts';

/** Moving sessions between stores. */
export interface SessionTransfer {
  exportSession(id: string): Promise<SessionSnapshot | null>;
  /** Fails with INVALID_INPUT if the session id already exists in this store. */
  importSession(snapshot: SessionSnapshot, audit?: AuditEvent[]): Promise<void>;
}
