import { ConfigError } from '../core/errors/config-error.ts';
import { cipherKey, open, seal } from './aes-gcm.ts';
import type { CipherKey } from './cipher-key.ts';
import type { KeyProvider, WrappedKey } from './key-provider.ts';

export const ENCRYPTION_KEYS_VAR = 'COUNTERSIGN_ENCRYPTION_KEYS';

const FORMAT = `${ENCRYPTION_KEYS_VAR} is a comma-separated list of id:base64 entries, each a 32-byte key, newest first (e.g. "k2:…,k1:…"); generate one with: node -e "console.log('k1:'+require('crypto').randomBytes(32).toString('base64'))"`;

/** Parses `id:base64-32-bytes,…`: the first entry wraps new data keys, all of them unwrap. */
export function parseEncryptionKeys(value: string): Map<string, Uint8Array> {
  const keys = new Map<string, Uint8Array>();
  for (const entry of value.split(',')) {
    const item = entry.trim();
    if (item === '') continue;
    const colon = item.indexOf(':');
    const id = colon < 0 ? '' : item.slice(0, colon).trim();
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
      throw new ConfigError(
        `${ENCRYPTION_KEYS_VAR} has an entry without a key id (letters, digits, _ or -).`,
        {
          hint: FORMAT,
        },
      );
    }
    const material = item.slice(colon + 1).trim();
    const bytes = Buffer.from(material, 'base64');
    if (bytes.length !== 32 || bytes.toString('base64').replace(/=+$/, '') !== material.replace(/=+$/, '')) {
      const what =
        bytes.length === 32 ? 'has characters that are not base64' : `is ${bytes.length} bytes, not 32`;
      throw new ConfigError(
        `${ENCRYPTION_KEYS_VAR} key "${id}" is not a base64 key of 32 bytes: it ${what}.`,
        {
          hint: FORMAT,
        },
      );
    }
    if (keys.has(id))
      throw new ConfigError(`${ENCRYPTION_KEYS_VAR} names key "${id}" twice.`, { hint: FORMAT });
    keys.set(id, bytes);
  }
  if (keys.size === 0)
    throw new ConfigError(`${ENCRYPTION_KEYS_VAR} is set but holds no key.`, { hint: FORMAT });
  return keys;
}

/** The built-in KeyProvider: KEKs from the environment, wrapping with AES-256-GCM locally. */
export function envKeyProvider(value: string): KeyProvider {
  // Imported once as KeyObjects, like data keys: a wrap or unwrap (one per new data key, and
  // one per key a process loads) sets up its cipher about five times faster than from raw bytes.
  const keys = new Map<string, CipherKey>(
    [...parseEncryptionKeys(value)].map(([id, bytes]) => [id, cipherKey(bytes)]),
  );
  const ids = [...keys.keys()];
  const current = ids[0] as string;
  return {
    name: 'env',
    currentKeyId: () => current,
    keyIds: () => ids,
    async wrap(dataKeyId, dataKey): Promise<WrappedKey> {
      const kek = keys.get(current) as CipherKey;
      return { kekId: current, wrapped: seal(kek, dataKey, Buffer.from(dataKeyId)).toString('base64') };
    },
    async unwrap(dataKeyId, wrapped) {
      const kek = keys.get(wrapped.kekId);
      if (kek === undefined) {
        throw new ConfigError(
          `Data key ${dataKeyId} is wrapped by key "${wrapped.kekId}", which ${ENCRYPTION_KEYS_VAR} does not hold (it holds ${ids.map((id) => `"${id}"`).join(', ')}).`,
          {
            hint: `Put key "${wrapped.kekId}" into ${ENCRYPTION_KEYS_VAR} (the newest key stays first); nothing was changed.`,
          },
        );
      }
      const plain = open(kek, Buffer.from(wrapped.wrapped, 'base64'), Buffer.from(dataKeyId));
      if (plain === null || plain.length !== 32) {
        throw new ConfigError(
          `Key "${wrapped.kekId}" in ${ENCRYPTION_KEYS_VAR} does not unwrap data key ${dataKeyId}: it is not the key that wrapped it.`,
          {
            hint: `Set ${ENCRYPTION_KEYS_VAR} to the key "${wrapped.kekId}" this store was written with; nothing was changed.`,
          },
        );
      }
      return plain;
    },
  };
}
