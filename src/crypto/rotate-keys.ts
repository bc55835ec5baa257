import type { AuditLog } from '../store/ports/audit-log.ts';
import type { KeyRotation, Keyring } from './keyring.ts';

export interface KeyRotationReport extends KeyRotation {
  /** When the rotation finished, and who ran it (the audit entry's time and actor). */
  at: string;
  by: string;
  /** False when the store keeps no audit trail (a `file:` store): then nothing records it. */
  audited: boolean;
}

/**
 * Rotates the store's data keys under the newest key-encryption key and records that it did,
 * as a `keys.rotated` audit entry (who, when, how many, which KEK ids; no key material). The
 * entry follows the rotation: each key is its own compare-and-set, so an interrupted rotation
 * has no entry, and running it again finishes it and records what that run re-wrapped.
 */
export async function rotateDataKeys(
  keyring: Keyring,
  trail: Pick<AuditLog, 'appendAudit'> | null,
  options: { by: string; now?: () => Date },
): Promise<KeyRotationReport> {
  const rotation = await keyring.rotate();
  const at = (options.now?.() ?? new Date()).toISOString();
  if (trail !== null) {
    await trail.appendAudit(
      [
        {
          kind: 'keys.rotated',
          session: null,
          requestId: null,
          actor: options.by,
          data: {
            kekId: rotation.kekId,
            rewrapped: rotation.rewrapped,
            total: rotation.total,
            from: rotation.from,
          },
        },
      ],
      at,
    );
  }
  return { ...rotation, at, by: options.by, audited: trail !== null };
}
