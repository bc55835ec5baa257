/**
 * What no stored key, id or text holds and the backends would treat differently: a NUL
 * (PostgreSQL text cannot hold one; SQLite's LIKE ends its pattern there) and half of a
 * surrogate pair (half an emoji to the memory stores, U+FFFD once encoded for SQL). The u
 * flag keeps whole pairs out of the class.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: a NUL is what this looks for.
const UNSTORABLE = /[\u0000\ud800-\udfff]/u;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above.
const UNSTORABLE_ALL = /[\u0000\ud800-\udfff]/gu;

/**
 * Why `text` cannot be searched for alike on every backend, or null when it can. Every list
 * refuses such a needle, filter or cursor through this one check.
 */
export function unsearchable(text: string): string | null {
  const found = UNSTORABLE.exec(text)?.[0];
  if (found === undefined) return null;
  return found === '\u0000' ? 'a NUL character' : 'half of a UTF-16 surrogate pair';
}

/**
 * A text a tool or port wrote (an effect preview), as every backend stores it alike: each
 * NUL and each half of a surrogate pair becomes U+FFFD, as SQL's UTF-8 encoding makes the
 * latter anyway. Applied before the text is bound (effectHash), so what a person reads is
 * what was hashed, on every store.
 */
export function storableText(text: string): string {
  return UNSTORABLE.test(text) ? text.replace(UNSTORABLE_ALL, '\uFFFD') : text;
}
