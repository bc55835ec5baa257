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

/**
 * Text as a database column holds it once encoded as UTF-8: each half of a surrogate pair
 * (which JSON.parse accepts, from a tool call or a request body) becomes U+FFFD, on SQLite and
 * PostgreSQL alike. Unlike storableText it leaves a NUL, which SQLite keeps and PostgreSQL
 * refuses with an error of its own. Whatever is compared with stored text, or hashed to be
 * verified against it later (an audit link), takes this form first; the memory store keeps it
 * too, so every backend reads back the same. Well-formed text is returned as it is.
 */
export function storedText<T extends string | null>(text: T): T {
  return (text === null || text.isWellFormed() ? text : text.toWellFormed()) as T;
}
