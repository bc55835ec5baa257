/**
 * Characters a reader cannot see, or that change how the text around them is shown: C0 and
 * C1 controls and DEL (Cc); format characters such as zero-width spaces and joiners, bidi
 * overrides, embeddings and isolates (Cf); line and paragraph separators; lone surrogates;
 * and the Hangul fillers that render as blank letters. A tool's effect line or a customer's
 * message holding one could show a person something other than what it says.
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0]/gu;

/** Layout that cannot mislead in multi-line text: kept when `multiline` is set. */
const LAYOUT = new Set(['\n', '\r', '\t']);

/**
 * The text with every invisible character replaced by `mark(char)`, so that it shows. The one
 * place that decides which characters those are: the inbox, the chat page, the CLI and the
 * JSON shown to people all go through it, each with its own way of marking.
 */
export function revealInvisible(
  text: string,
  mark: (char: string) => string,
  options: { multiline?: boolean } = {},
): string {
  return text.replace(INVISIBLE, (char) => (options.multiline && LAYOUT.has(char) ? char : mark(char)));
}

/** U+202E: how the inbox names an invisible character. */
export function codePointName(char: string): string {
  return `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/** \u202e (\ud83f\udc01 beyond the BMP): valid inside a JSON string, and readable. */
export function jsonEscape(char: string): string {
  let out = '';
  for (let i = 0; i < char.length; i++) out += `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}
