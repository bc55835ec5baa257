import { InvalidCursorError } from '../core/errors/invalid-cursor-error.ts';
import { unsearchable } from '../core/storable-text.ts';

// The one format of every keyset page's cursor (requests, runs): base64url of
// [version, order, key, id]. The order is inside, so a cursor is never read under another
// order or by another list; what it means stays opaque to callers.

const CURSOR_VERSION = 1;

export function encodeKeysetCursor(order: string, key: string, id: string): string {
  return Buffer.from(JSON.stringify([CURSOR_VERSION, order, key, id])).toString('base64url');
}

/** The cursor's order and position; INVALID_CURSOR for anything this format did not write. */
export function decodeKeysetCursor(cursor: string): { order: string; key: string; id: string } {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url');
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch (cause) {
    throw new InvalidCursorError('The page cursor is not one this listing handed out.', { cause });
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 4 ||
    parsed[0] !== CURSOR_VERSION ||
    typeof parsed[1] !== 'string' ||
    typeof parsed[2] !== 'string' ||
    typeof parsed[3] !== 'string' ||
    // Only a forged cursor holds what no stored key or id can.
    unsearchable(parsed[2]) !== null ||
    unsearchable(parsed[3]) !== null
  ) {
    throw new InvalidCursorError('The page cursor is not one this listing handed out.');
  }
  return { order: parsed[1], key: parsed[2], id: parsed[3] };
}
