import { canonicalJson } from '../../core/canonical-json.ts';

/**
 * Arguments as a person reads them: the canonical JSON (sorted keys, exactly what was
 * hashed), indented. Invisible format characters (zero-width, bidi overrides) are shown as
 * \uXXXX escapes so that what is on screen cannot differ from what runs.
 */
export function prettyJson(value: unknown): string {
  return JSON.stringify(JSON.parse(canonicalJson(value)), null, 2).replace(
    /[\p{Cf}\u2028\u2029]/gu,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** The same on one line, for tables. */
export function compactJson(value: unknown): string {
  return prettyJson(value).replace(/\n\s*/g, ' ');
}
