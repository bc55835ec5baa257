import { CorruptDataError } from '../core/errors/corrupt-data-error.ts';
import {
  GROUP_MEMBER_PREFIX,
  SEALED_GROUP_PREFIX as GROUP_PREFIX,
  groupLength,
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
 *
 * Values written together into consecutive rows (a step's messages) are sealed as one:
 * `cs1g:<data key id>:<count>:<base64>` in the first row, `cs1g+<k>` in the k-th after it.
 * The additional data then also names where the first row sits (`bind`), so the group cannot
 * be moved; each value still has its own nonce only as part of the group's one.
 */
export function encryptingCodec(keyring: Keyring): PayloadCodec {
  const opened = keyring.openedTexts;

  function sealJson(json: string, scope: string | undefined, prefix: string): string {
    const key = keyring.sealingKey(scope ?? STORE_SCOPE);
    const sealed = `${prefix}${key.id}:${seal(key.key, Buffer.from(json, 'utf8'), key.aad).toString('base64')}`;
    opened.set(sealed, json);
    return sealed;
  }

  /** Additional data of a group: its data key id, then where its first row sits. */
  const groupAad = (keyAad: Uint8Array, bind: string) =>
    Buffer.concat([keyAad, GROUP_AAD_SEPARATOR, Buffer.from(bind, 'utf8')]);

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
            : text.startsWith(GROUP_PREFIX)
              ? GROUP_PREFIX
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
    encodeGroup(values, scope, bind) {
      const json = JSON.stringify(values);
      const key = keyring.sealingKey(scope ?? STORE_SCOPE);
      const sealed = seal(key.key, Buffer.from(json, 'utf8'), groupAad(key.aad, bind)).toString('base64');
      const head = `${GROUP_PREFIX}${key.id}:${values.length}:${sealed}`;
      // Cached with where it was bound: a copy of the head in another row is not served from here.
      opened.set(head, `${bind}\u0000${json}`);
      return [head, ...values.slice(1).map((_, k) => `${GROUP_MEMBER_PREFIX}${k + 1}`)];
    },
    decodeGroup(texts, where, bind) {
      const head = texts[0] ?? '';
      const count = groupLength(head);
      if (count !== texts.length) throw damaged(where, 'heads a group of another size');
      texts.forEach((member, k) => {
        if (k > 0 && member !== `${GROUP_MEMBER_PREFIX}${k}`)
          throw damaged(where, `has a group member ${k} that was changed`);
      });
      const idEnd = head.indexOf(':', GROUP_PREFIX.length);
      const id = head.slice(GROUP_PREFIX.length, idEnd);
      if (id === '') throw damaged(where, 'names no data key');
      const key = keyring.openingKey(id);
      if (key === null) return texts.map(() => ERASED_MARKER);
      let json: string;
      const known = opened.get(head);
      if (known?.startsWith(bind) && known.charCodeAt(bind.length) === 0) {
        json = known.slice(bind.length + 1);
      } else {
        const body = head.slice(head.indexOf(':', idEnd + 1) + 1);
        const plain = open(key.key, Buffer.from(body, 'base64'), groupAad(key.aad, bind));
        if (plain === null)
          throw damaged(
            where,
            `does not decrypt with its data key ${id} where it is: it was changed or moved`,
          );
        json = plain.toString('utf8');
        opened.set(head, `${bind}\u0000${json}`);
      }
      const values = jsonCodec.decode(json, where);
      if (!Array.isArray(values) || values.length !== count)
        throw damaged(where, 'holds a group of another size');
      return values;
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

const GROUP_AAD_SEPARATOR = Buffer.from([0]);

function damaged(where: string, what: string): CorruptDataError {
  return new CorruptDataError(`Stored data at ${where} is encrypted but ${what}.`, {
    hint: 'Restore the store from a backup or remove the damaged row; nothing was changed.',
  });
}
