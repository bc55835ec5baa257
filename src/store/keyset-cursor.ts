import { createHash } from 'node:crypto';
import { InvalidCursorError } from '../core/errors/invalid-cursor-error.ts';
import { unsearchable } from '../core/storable-text.ts';

// The one format of every keyset page's cursor (requests, runs, the execution ledger):
// base64url of [version, order, key, id, filters]. The order is inside, so a cursor is never
// read under another order or by another list; `filters` is a short digest of the filters
// the page was read under, so a cursor is never read under other filters either (a client
// that paged `status=pending` and sent the cursor with `status=approved` or another search
// got a page of the new list starting at a position of the old one: rows skipped without a
// word). What a cursor holds stays opaque to callers: they pass it back as it was.
//
// The digest only tells a cursor's own list apart from another: anyone can forge a cursor,
// and a forged one is only a position (every list still applies its filters to every row),
// so it needs no key, and 96 bits of SHA-256 are plenty.
//
// Version 1 cursors (before the filters were bound) are refused, not read: one cannot say
// which filters they were handed out under, so reading one could give exactly the wrong page
// this version exists to prevent. A cursor lives while a client walks one list; after an
// upgrade the client starts again from the first page, and the error says so.

const CURSOR_VERSION = 2;
const UNBOUND_VERSION = 1;
const DIGEST_LENGTH = 16; // base64url characters: 96 bits

/**
 * The filters a page was read under, by name. Each list decides what its filters are (see
 * its plan: request-page.ts, run-page.ts, execution-page.ts) and passes them as it applies
 * them: normalised (trimmed, folded) and with a blank filter already absent where the list
 * treats blank as no filter, so two queries that select the same rows bind alike. Never the
 * page size (a client may change it between pages), whether to count, or the sort (the
 * cursor's order holds it).
 *
 * Canonical form: keys in code-unit order; `undefined` and `null` are no filter (the same as
 * leaving the key out); `''` is a value, not a blank (the list's plan drops blanks first);
 * an array is a set (order and repeats do not count), and an empty array is a value too.
 */
export type CursorFilters = Readonly<
  Record<string, string | number | boolean | null | undefined | readonly string[]>
>;

function canonicalFilters(filters: CursorFilters): string {
  const entries: Array<[string, unknown]> = [];
  for (const name of Object.keys(filters).sort()) {
    const value = filters[name];
    if (value === undefined || value === null) continue;
    entries.push([name, Array.isArray(value) ? [...new Set(value)].sort() : value]);
  }
  // JSON quotes every string, so no two filter sets write the same text.
  return JSON.stringify(entries);
}

/** The short digest of `filters` a cursor carries (base64url, DIGEST_LENGTH characters). */
export function filtersDigest(filters: CursorFilters): string {
  return createHash('sha256').update(canonicalFilters(filters)).digest('base64url').slice(0, DIGEST_LENGTH);
}

export function encodeKeysetCursor(order: string, key: string, id: string, filters: CursorFilters): string {
  return Buffer.from(JSON.stringify([CURSOR_VERSION, order, key, id, filtersDigest(filters)])).toString(
    'base64url',
  );
}

const NOT_HANDED_OUT = 'The page cursor is not one this listing handed out.';

/** What a list expects of a cursor handed back to it. */
export interface ExpectedCursor {
  /** The order the cursor must have been handed out under (the list and its sort). */
  order: string;
  /** The filters of this page: they must be the ones the cursor was handed out under. */
  filters: CursorFilters;
  /** The error for a cursor of another order (the default names neither). */
  otherOrder?: (order: string) => InvalidCursorError;
}

/**
 * The cursor's position, when it was handed out by this list, under this order and these
 * filters; INVALID_CURSOR, saying what to do, for anything else. The order is checked before
 * the filters, so a cursor of another list or sort says so rather than "other filters".
 */
export function decodeKeysetCursor(cursor: string, expected: ExpectedCursor): { key: string; id: string } {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url');
    const bytes = Buffer.from(cursor, 'base64url');
    // Only the text this format writes: a character added or cut that the decoder would
    // drop (or bits it would ignore) is an edited cursor, not this one.
    if (bytes.toString('base64url') !== cursor) throw new Error('not as encoded');
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (cause) {
    throw new InvalidCursorError(NOT_HANDED_OUT, { cause });
  }
  if (Array.isArray(parsed) && parsed[0] === UNBOUND_VERSION && parsed.length === 4) {
    throw new InvalidCursorError(
      'This cursor was handed out by an earlier version of countersign, before cursors were bound to their filters.',
      { hint: 'Start again from the first page without a cursor; the pages after it hand out new ones.' },
    );
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 5 ||
    parsed[0] !== CURSOR_VERSION ||
    typeof parsed[1] !== 'string' ||
    typeof parsed[2] !== 'string' ||
    typeof parsed[3] !== 'string' ||
    typeof parsed[4] !== 'string' ||
    // Only a forged cursor holds what no stored key or id can.
    unsearchable(parsed[2]) !== null ||
    unsearchable(parsed[3]) !== null
  ) {
    throw new InvalidCursorError(NOT_HANDED_OUT);
  }
  const [, order, key, id, digest] = parsed as [number, string, string, string, string];
  if (order !== expected.order) {
    throw (
      expected.otherOrder?.(order) ??
      new InvalidCursorError('The page cursor belongs to another list or sort.', {
        hint: 'Keep the list and sort of the first page while following `next`, or start again without a cursor.',
      })
    );
  }
  if (digest !== filtersDigest(expected.filters)) {
    throw new InvalidCursorError('This cursor was handed out for other filters.', {
      hint: 'Start again from the first page without a cursor, or send the same filters as the page that handed it out.',
    });
  }
  return { key, id };
}
