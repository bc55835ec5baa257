import type { JsonValue } from '../core/json.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../core/json-depth.ts';
import { plainJson } from '../core/plain-json.ts';

/**
 * What a tool returned, as the ledger, the session and the audit keep it: plain JSON, the
 * same on every store. A tool's `execute` is the app's code, and what it returns is whatever
 * that code returns (typed JSON in TypeScript, anything in JavaScript or from an AI SDK tool),
 * but by then the call has run. So nothing it returns may stop its result from being recorded:
 * a record that fails after the call ran leaves the ledger at `started`, and the call is
 * reported `unknown` although it succeeded.
 *
 * - The value is taken as every store keeps JSON (plainJson: a Date becomes its ISO text,
 *   non-finite numbers null, a bigint its decimal text, undefined and functions left out),
 *   so the memory store keeps what SQLite and PostgreSQL read back, and the audit's result
 *   hash is over the value stored, not over an object that serializes differently. Nothing
 *   returned (undefined, or a function) is `null`.
 * - A value that has no JSON form (a cycle, a throwing getter or toJSON) or nests deeper than
 *   MAX_JSON_DEPTH (which an export could then not be imported with) is replaced by a
 *   sentence saying so: the call still succeeded, and the person and the model read why its
 *   output is missing.
 */
export function toolOutput(value: unknown): JsonValue {
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return null;
  const plain = plainJson(value);
  if (!plain.ok) return notKept(plain.problem);
  if (nestsDeeperThan(plain.json, MAX_JSON_DEPTH)) {
    return notKept(`it nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
  }
  return plain.json;
}

function notKept(why: string): string {
  return `The tool ran, but its output could not be kept: ${why}. Return plain JSON from the tool to keep it.`;
}
