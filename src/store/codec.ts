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
  /**
   * Values written together into consecutive rows and only ever read back together (the
   * messages one agent step appends): a codec may store them as one value in the first row
   * and references in the others, so sealing costs one cipher per step, not one per message.
   * `bind` names where the first row sits (table, owner, position); a sealing codec binds it
   * in, so the group cannot be moved to another session or position. Returns one text per
   * value. Without it (the JSON codec) each value is encoded on its own.
   */
  encodeGroup?(values: readonly unknown[], scope: string | undefined, bind: string): string[];
  /** The values of one group written by encodeGroup: `texts` are its head and its members. */
  decodeGroup?(texts: readonly string[], where: string, bind: string): unknown[];
}

/** The prefix of every value the encrypting codec writes (src/crypto/encrypting-codec.ts). */
export const SEALED_PREFIX = 'cs1:';
/** …and of a sealed text column (an effect preview). */
export const SEALED_TEXT_PREFIX = 'cs1t:';
/** …of the first row of values sealed together: `cs1g:<data key id>:<count>:<base64>`. */
export const SEALED_GROUP_PREFIX = 'cs1g:';
/** …of the other rows of such a group: `cs1g+<k>`, the k-th value of the group k rows up. */
export const GROUP_MEMBER_PREFIX = 'cs1g+';

/** What every stored text the encrypting codec wrote starts with (sealed, text, group, member). */
export const SEALED_ANY_PREFIX = 'cs1';

/** Consecutive rows of values written together (see `encodeGroup`), as read back in order. */
export interface GroupedRow {
  text: string;
  /** Names the row in an error. */
  where: string;
  /** The row's position (a message's seq): a group's rows must be consecutive. */
  position: number;
  /** What `encodeGroup` was told about the first row, were this row the first. */
  bind: string;
}

export const jsonCodec: PayloadCodec = {
  name: 'json',
  encode: (value) => JSON.stringify(value),
  decode: (text, where) => {
    try {
      return JSON.parse(text);
    } catch (cause) {
      if (text.startsWith(SEALED_ANY_PREFIX)) throw encryptedWithoutKeys(text, where);
      throw new CorruptDataError(`Stored data at ${where} is not valid JSON.`, {
        hint: 'Restore the store from a backup or remove the damaged row; nothing was changed.',
        cause,
      });
    }
  },
};

/** Encodes values bound for consecutive rows: grouped when the codec groups and there are several. */
export function encodeGroup(
  codec: PayloadCodec,
  values: readonly unknown[],
  scope: string | undefined,
  bind: string,
): string[] {
  if (values.length < 2 || codec.encodeGroup === undefined)
    return values.map((value) => codec.encode(value, scope));
  return codec.encodeGroup(values, scope, bind);
}

/** How many rows a group head spans (`cs1g:<id>:<count>:…`); null for any other text. */
export function groupLength(text: string): number | null {
  if (!text.startsWith(SEALED_GROUP_PREFIX)) return null;
  const idEnd = text.indexOf(':', SEALED_GROUP_PREFIX.length);
  const countEnd = idEnd < 0 ? -1 : text.indexOf(':', idEnd + 1);
  const count = countEnd < 0 ? Number.NaN : Number(text.slice(idEnd + 1, countEnd));
  return Number.isSafeInteger(count) && count >= 2 ? count : 0;
}

/**
 * Decodes rows read back in order, some of which may be groups (a head, then its members in
 * the next rows). A member without its head, a group cut short or out of order is damage:
 * nothing is guessed.
 */
export function decodeRows(codec: PayloadCodec, rows: readonly GroupedRow[]): unknown[] {
  const values: unknown[] = [];
  for (let i = 0; i < rows.length; ) {
    const row = rows[i]!;
    const length = groupLength(row.text);
    if (length === null) {
      if (row.text.startsWith(GROUP_MEMBER_PREFIX))
        throw damagedGroup(row.where, 'refers to a group row that is not before it');
      values.push(codec.decode(row.text, row.where));
      i += 1;
      continue;
    }
    const group = rows.slice(i, i + length);
    if (length === 0 || group.length < length)
      throw damagedGroup(row.where, 'heads a group whose rows are missing');
    group.forEach((member, k) => {
      if (member.position !== row.position + k) throw damagedGroup(member.where, 'is out of its group');
    });
    if (codec.decodeGroup === undefined) throw encryptedWithoutKeys(row.text, row.where);
    values.push(
      ...codec.decodeGroup(
        group.map((member) => member.text),
        row.where,
        row.bind,
      ),
    );
    i += length;
  }
  return values;
}

function damagedGroup(where: string, what: string): CorruptDataError {
  return new CorruptDataError(`Stored data at ${where} ${what}.`, {
    hint: 'Restore the store from a backup or remove the damaged rows; nothing was changed.',
  });
}

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
