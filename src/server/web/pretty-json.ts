import { canonicalJson } from '../../core/canonical-json.ts';
import { jsonEscape, revealInvisible } from '../../core/visible-text.ts';

/**
 * Arguments as a person reads them: the canonical JSON (sorted keys, exactly what was
 * hashed), indented. Invisible characters (zero-width, bidi overrides, DEL and C1 controls)
 * are shown as \uXXXX escapes so that what is on screen cannot differ from what runs; the
 * indentation's own line breaks stay.
 */
export function prettyJson(value: unknown): string {
  return revealInvisible(JSON.stringify(JSON.parse(canonicalJson(value)), null, 2), jsonEscape, {
    multiline: true,
  });
}

/** The same on one line, for tables. */
export function compactJson(value: unknown): string {
  return prettyJson(value).replace(/\n\s*/g, ' ');
}
