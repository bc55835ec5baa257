import { storedText } from '../../core/storable-text.ts';

/**
 * `value` as the text of one `json` statement parameter, for statements that take a list of
 * rows (`json_to_recordset($1::json)`) instead of one array parameter per column.
 *
 * Why not arrays: PostgreSQL sizes `unnest($1::text[])` and `= ANY($1)` from the array it is
 * given, so a prepared statement fed arrays of varying length gets a new custom plan on every
 * execution (a custom plan for 2 rows always looks cheaper than the generic one, made for 10),
 * and planning the audit link cost more than running it. A `json` parameter is sized the same
 * whatever it holds, so after its first five runs PostgreSQL keeps one generic plan.
 *
 * A string with a lone surrogate would reach PostgreSQL as a `\udXXX` escape its JSON parser
 * refuses; it is sent as a text parameter's UTF-8 encoding sends it (storedText).
 */
export function jsonParameter(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'string' ? storedText(item) : item));
}
