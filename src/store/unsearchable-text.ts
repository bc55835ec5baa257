/**
 * What no stored key, id or text holds and the backends would compare differently: a NUL
 * (PostgreSQL text cannot hold one; SQLite's LIKE ends its pattern there) and half of a
 * surrogate pair (half an emoji to the memory stores, U+FFFD once encoded for SQL). Every
 * list refuses these in a needle, filter or cursor through this one check, so all backends
 * answer alike. The u flag keeps whole pairs out of the class.
 */
const UNSEARCHABLE = /[\u0000\ud800-\udfff]/u;

/** Why `text` cannot be searched for alike on every backend, or null when it can. */
export function unsearchable(text: string): string | null {
  const found = UNSEARCHABLE.exec(text)?.[0];
  if (found === undefined) return null;
  return found === '\u0000' ? 'a NUL character' : 'half of a UTF-16 surrogate pair';
}
