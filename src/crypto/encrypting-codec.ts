import { CorruptDataError } from '../core/errors/corrupt-data-error.ts';
import {
  jsonCodec,
  type PayloadCodec,
  SEALED_PREFIX,
  SEALED_TEXT_PREFIX as TEXT_PREFIX,
} from '../store/codec.ts';
import { open, seal } from './aes-gcm.ts';
import { ERASED_MARKER, ERASED_TEXT } from './erased.ts';
import type { Keyring } from './keyring.ts';
import { STORE_SCOPE } from './scopes.ts';

/**
 * The encrypting codec: `cs1:<data key id>:<base64 of nonce ‖ tag ‖ AES-256-GCM ciphertext>`,
 * the data key id bound in as additional data. Each value names its data key, and the
 * data key's row names the KEK that wraps it, so rotating the KEK rewrites no value. Text
 * that is not sealed is read as the JSON codec's (a store that had encryption turned on
 * later still reads its older rows).
 */
export function encryptingCodec(keyring: Keyring): PayloadCodec {
  const opened = keyring.openedTexts;

  function sealJson(json: string, scope: string | undefined, prefix: string): string {
    const key = keyring.sealingKey(scope ?? STORE_SCOPE);
    const sealed = `${prefix}${key.id}:${seal(key.key, json, key.aad).toString('base64')}`;
    opened.set(sealed, json);
    return sealed;
  }

  /** The JSON text inside a sealed value, or null when its key was forgotten. */
  function openJson(text: string, prefixLength: number, where: string): string | null {
    const colon = text.indexOf(':', prefixLength);
    const id = colon < 0 ? '' : text.slice(prefixLength, colon);
    if (id === '') throw damaged(where, 'names no data key');
    // The key first, even for a text already opened: a forgotten key opens nothing.
    const key = keyring.openingKey(id);
    if (key === null) return null;
    const known = opened.get(text);
    if (known !== undefined) return known;
    const plain = open(key.key, Buffer.from(text.slice(colon + 1), 'base64'), key.aad);
    if (plain === null) throw damaged(where, `does not decrypt with its data key ${id}: it was changed`);
    const json = plain.toString('utf8');
    opened.set(text, json);
    return json;
  }

  return {
    name: 'aes-256-gcm',
    async prepare(texts) {
      for (const text of texts) {
        const prefix = text.startsWith(SEALED_PREFIX)
          ? SEALED_PREFIX
          : text.startsWith(TEXT_PREFIX)
            ? TEXT_PREFIX
            : null;
        if (prefix === null) continue;
        const id = text.slice(prefix.length, text.indexOf(':', prefix.length));
        if (id !== '' && !keyring.has(id)) await keyring.ready({ dataKey: id });
      }
    },
    encode(value, scope) {
      const json = JSON.stringify(value);
      return json === undefined ? json : sealJson(json, scope, SEALED_PREFIX);
    },
    decode(text, where) {
      if (!text.startsWith(SEALED_PREFIX)) return jsonCodec.decode(text, where);
      const json = openJson(text, SEALED_PREFIX.length, where);
      return json === null ? ERASED_MARKER : jsonCodec.decode(json, where);
    },
    encodeText(text, scope) {
      return sealJson(JSON.stringify(text), scope, TEXT_PREFIX);
    },
    decodeText(stored, where) {
      if (!stored.startsWith(TEXT_PREFIX)) return stored;
      const json = openJson(stored, TEXT_PREFIX.length, where);
      return json === null ? ERASED_TEXT : String(jsonCodec.decode(json, where));
    },
  };
}

function damaged(where: string, what: string): CorruptDataError {
  return new CorruptDataError(`Stored data at ${where} is encrypted but ${what}.`, {
    hint: 'Restore the store from a backup or remove the damaged row; nothing was changed.',
  });
}
