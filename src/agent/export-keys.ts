import { createHmac, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../core/errors/config-error.ts';

/** One HMAC key: its id travels in the signed file, its secret never does. */
export interface ExportKey {
  id: string;
  secret: string;
}

/**
 * The keys of `COUNTERSIGN_EXPORT_KEY`: the first signs exports; every one verifies imports,
 * so a key can be rotated by putting the new one first and keeping the old one for a while.
 */
export interface ExportKeyring {
  signing: ExportKey;
  keys: readonly ExportKey[];
}

export interface ExportSignature {
  alg: 'HMAC-SHA256';
  keyId: string;
  /** Lowercase hex of HMAC-SHA256(secret, SIGNATURE_CONTEXT + canonical JSON of the body). */
  value: string;
}

export const MIN_SECRET_LENGTH = 32;
const keyIdPattern = /^[A-Za-z0-9._-]{1,64}$/;
// Binds the MAC to this use, so a MAC the same key makes for something else never verifies here.
const SIGNATURE_CONTEXT = 'countersign session export\n';

const FORMAT_HINT =
  'Set COUNTERSIGN_EXPORT_KEY to KEY_ID:SECRET (several separated by commas, the signing key first), ' +
  `with a secret of at least ${MIN_SECRET_LENGTH} characters, e.g. "2026-12:$(openssl rand -base64 32)".`;

/** Parses `ID:SECRET[,ID:SECRET…]`; unset or blank means no keys (exports are unsigned). */
export function parseExportKeys(text: string | undefined): ExportKeyring | undefined {
  const trimmed = text?.trim() ?? '';
  if (trimmed === '') return undefined;
  const keys = trimmed.split(',').map((part, index): ExportKey => {
    const item = part.trim();
    const colon = item.indexOf(':');
    const id = colon < 0 ? '' : item.slice(0, colon);
    const secret = colon < 0 ? '' : item.slice(colon + 1);
    const where = `COUNTERSIGN_EXPORT_KEY entry ${index + 1}`;
    if (!keyIdPattern.test(id)) {
      throw new ConfigError(
        `${where} has no valid key id before ":" (letters, digits, ".", "_" and "-", at most 64).`,
        { hint: FORMAT_HINT },
      );
    }
    if (secret.length < MIN_SECRET_LENGTH) {
      throw new ConfigError(
        `${where} (key ${id}) has a secret of ${secret.length} characters; at least ${MIN_SECRET_LENGTH} are needed.`,
        { hint: FORMAT_HINT },
      );
    }
    return { id, secret };
  });
  const ids = new Set<string>();
  for (const key of keys) {
    if (ids.has(key.id)) {
      throw new ConfigError(`COUNTERSIGN_EXPORT_KEY names key ${key.id} twice.`, { hint: FORMAT_HINT });
    }
    ids.add(key.id);
  }
  return { signing: keys[0] as ExportKey, keys };
}

function mac(secret: string, canonicalBody: string): string {
  return createHmac('sha256', secret).update(SIGNATURE_CONTEXT).update(canonicalBody).digest('hex');
}

export function signExport(keyring: ExportKeyring, canonicalBody: string): ExportSignature {
  return { alg: 'HMAC-SHA256', keyId: keyring.signing.id, value: mac(keyring.signing.secret, canonicalBody) };
}

export type SignatureCheck =
  | { kind: 'valid'; keyId: string }
  /** The file names a key this keyring does not hold, or there is no keyring at all. */
  | { kind: 'unverifiable'; keyId: string }
  | { kind: 'invalid'; keyId: string };

export function checkSignature(
  keyring: ExportKeyring | undefined,
  signature: ExportSignature,
  canonicalBody: string,
): SignatureCheck {
  const key = keyring?.keys.find((candidate) => candidate.id === signature.keyId);
  if (!key) return { kind: 'unverifiable', keyId: signature.keyId };
  const expected = Buffer.from(mac(key.secret, canonicalBody), 'hex');
  const given = Buffer.from(signature.value, 'hex');
  const same = given.length === expected.length && timingSafeEqual(given, expected);
  return { kind: same ? 'valid' : 'invalid', keyId: signature.keyId };
}
