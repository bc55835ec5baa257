import { randomBytes } from 'node:crypto';
import { ConfigError } from '../core/errors/config-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { open, seal } from './aes-gcm.ts';
import { ENCRYPTION_KEYS_VAR } from './env-key-provider.ts';
import type { KeyProvider } from './key-provider.ts';

/**
 * An export of an encrypted store, encrypted in turn: the document (signed first, when
 * COUNTERSIGN_EXPORT_KEY is set) sealed with a data key of its own, wrapped by the current
 * key-encryption key. A store whose COUNTERSIGN_ENCRYPTION_KEYS holds that key imports it;
 * `session export --decrypt` writes the plain document instead.
 */
export const SEALED_EXPORT_FORMAT = 'countersign.sealed-export';

export interface SealedExport {
  format: typeof SEALED_EXPORT_FORMAT;
  version: 1;
  /** The KEK that wraps `wrappedKey`. */
  kekId: string;
  dataKeyId: string;
  wrappedKey: string;
  /** base64 of nonce ‖ tag ‖ AES-256-GCM ciphertext of the document's JSON text. */
  sealed: string;
}

export async function sealExport(text: string, provider: KeyProvider): Promise<SealedExport> {
  const dataKeyId = `ex_${randomBytes(12).toString('hex')}`;
  const key = randomBytes(32);
  const wrapped = await provider.wrap(dataKeyId, key);
  return {
    format: SEALED_EXPORT_FORMAT,
    version: 1,
    kekId: wrapped.kekId,
    dataKeyId,
    wrappedKey: wrapped.wrapped,
    sealed: seal(key, Buffer.from(text, 'utf8'), Buffer.from(dataKeyId)).toString('base64'),
  };
}

export function isSealedExport(value: unknown): value is SealedExport {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { format?: unknown }).format === SEALED_EXPORT_FORMAT
  );
}

/** The document's JSON text; CONFIG_ERROR naming the key id when this store cannot unwrap it. */
export async function openExport(
  value: SealedExport,
  provider: KeyProvider | null,
  file: string,
): Promise<string> {
  if (provider === null) {
    throw new ConfigError(
      `${file} is an encrypted export (key "${value.kekId}") and no encryption keys are set.`,
      {
        hint: `Set ${ENCRYPTION_KEYS_VAR} with key "${value.kekId}" for the importing store, or export again with --decrypt; nothing was imported.`,
      },
    );
  }
  const fields = [value.kekId, value.dataKeyId, value.wrappedKey, value.sealed];
  if (value.version !== 1 || fields.some((field) => typeof field !== 'string')) {
    throw new InvalidInputError(`${file} is not an encrypted export this version can read.`, {
      hint: 'Give a file written by `countersign session export`; nothing was imported.',
    });
  }
  const key = await provider.unwrap(value.dataKeyId, { kekId: value.kekId, wrapped: value.wrappedKey });
  const text = open(key, Buffer.from(value.sealed, 'base64'), Buffer.from(value.dataKeyId));
  if (text === null) {
    throw new InvalidInputError(
      `${file} is an encrypted export whose contents were changed: it does not decrypt.`,
      {
        hint: 'Export the session again; nothing was imported.',
      },
    );
  }
  return text.toString('utf8');
}
