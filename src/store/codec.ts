import { ConfigError } from '../core/errors/config-error.ts';
import { CorruptDataError } from '../core/errors/corrupt-data-error.ts';

/**
 * The seam every stored payload (messages, arguments, effect previews, results, batches,
 * checkpoint state, app state, webhook bodies, audit data) passes through. Backends store
 * the encoded text as it is; encryption at rest (src/crypto/) or compression is a different
 * codec, not a change to any backend.
 *
 * Encode and decode are synchronous on purpose: they run inside a backend's transaction,
 * once per row. A codec that needs something asynchronous first (a data key from a KMS)
 * throws a signal the store wrapper catches, does that, and runs the call again
 * (src/crypto/encrypted-store.ts), so the hot path stays a function call.
 */
export interface PayloadCodec {
  readonly name: string;
  /**
   * `scope` says whose data it is (src/crypto/scopes.ts: `session:<id>`, `principal:<id>`,
   * `run:<id>`; absent for data of no one customer), so an encrypting codec picks that
   * customer's key. Ids, statuses, timestamps and hashes are never passed here: they stay
   * clear so queries and compare-and-sets work.
   */
  encode(value: unknown, scope?: string): string;
  /** `where` names the row for the error message when the text cannot be decoded. */
  decode(text: string, where: string): unknown;
  /**
   * For text columns that hold a customer's words but are not JSON (an effect preview). A
   * codec without them leaves the text as it is, which is how the JSON codec keeps the
   * format stores were written in.
   */
  encodeText?(text: string, scope?: string): string;
  decodeText?(stored: string, where: string): string;
  /**
   * Fetches what decoding these stored texts needs (their data keys), so the decode that
   * follows cannot stop half-way: a backend that decodes rows after their statement
   * committed calls it first.
   */
  prepare?(texts: readonly string[]): Promise<void>;
}

/** The prefix of every value the encrypting codec writes (src/crypto/encrypting-codec.ts). */
export const SEALED_PREFIX = 'cs1:';
/** …and of a sealed text column (an effect preview). */
export const SEALED_TEXT_PREFIX = 'cs1t:';

export const jsonCodec: PayloadCodec = {
  name: 'json',
  encode: (value) => JSON.stringify(value),
  decode: (text, where) => {
    try {
      return JSON.parse(text);
    } catch (cause) {
      if (text.startsWith(SEALED_PREFIX)) throw encryptedWithoutKeys(text, where);
      throw new CorruptDataError(`Stored data at ${where} is not valid JSON.`, {
        hint: 'Restore the store from a backup or remove the damaged row; nothing was changed.',
        cause,
      });
    }
  },
};

export function encodeText(codec: PayloadCodec, text: string, scope?: string): string {
  return codec.encodeText === undefined ? text : codec.encodeText(text, scope);
}

export function decodeText(codec: PayloadCodec, stored: string, where: string): string {
  if (codec.decodeText !== undefined) return codec.decodeText(stored, where);
  if (stored.startsWith(SEALED_TEXT_PREFIX)) throw encryptedWithoutKeys(stored, where);
  return stored;
}

function encryptedWithoutKeys(text: string, where: string): ConfigError {
  const dataKey = text.slice(text.indexOf(':') + 1).split(':', 1)[0];
  return new ConfigError(
    `Stored data at ${where} is encrypted (data key ${dataKey}) and no encryption keys are set.`,
    {
      hint: 'Set COUNTERSIGN_ENCRYPTION_KEYS to the keys this store was written with; nothing was changed.',
    },
  );
}
