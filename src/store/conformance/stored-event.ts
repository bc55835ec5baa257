import type { AuditEvent, AuditKind } from '../../core/audit.ts';
import type { JsonObject } from '../../core/json.ts';

/**
 * An audit event of any kind with any data, for tests of how a store keeps entries (chained,
 * in the write's transaction, rolled back with it) rather than of what they say: stores write
 * every event alike. Emitters build `AuditEvent`s, whose data their kind types.
 */
export function storedEvent(event: {
  kind: AuditKind;
  session: string | null;
  requestId: string | null;
  actor: string;
  data: JsonObject;
}): AuditEvent {
  return event as AuditEvent;
}
