import type { JsonValue } from '../core/json.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../core/json-depth.ts';

/**
 * What a tool returned, as the ledger, the session and the audit keep it: plain JSON, the
 * same on every store. A tool's `execute` is the app's code, and what it returns is whatever
 * that code returns (typed JSON in TypeScript, anything in JavaScript or from an AI SDK tool),
 * but by then the call has run. So nothing it returns may stop its result from being recorded:
 * a record that fails after the call ran leaves the ledger at `started`, and the call is
 * reported `unknown` although it succeeded.
 *
 * - The value is taken as `JSON.stringify` takes it: `toJSON` (a Date becomes its ISO text),
 *   `undefined`, functions and symbols left out of objects and `null` in arrays, non-finite
 *   numbers `null`. Nothing returned is `null`. A bigint becomes its decimal text. So the
 *   memory store keeps what SQLite and PostgreSQL read back, and the audit's result hash is
 *   over the value stored, not over an object that serializes differently.
 * - A value that has no JSON form (a cycle) or nests deeper than MAX_JSON_DEPTH (which an
 *   export could then not be imported with) is replaced by a sentence saying so: the call
 *   still succeeded, and the person and the model read why its output is missing.
 */
export function toolOutput(value: unknown): JsonValue {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, (_key, item: unknown) =>
      typeof item === 'bigint' ? item.toString() : item,
    );
  } catch (error) {
    // A cycle (TypeError), a nesting too deep for the stack (RangeError), a throwing toJSON.
    return notKept(error instanceof RangeError ? 'it nests too deeply' : describe(error));
  }
  if (text === undefined) return null;
  const json = JSON.parse(text) as JsonValue;
  if (nestsDeeperThan(json, MAX_JSON_DEPTH)) {
    return notKept(`it nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
  }
  return json;
}

function describe(error: unknown): string {
  if (error instanceof TypeError && /circular/i.test(error.message)) return 'it refers to itself (a cycle)';
  return `turning it into JSON failed (${error instanceof Error ? error.message : String(error)})`;
}

function notKept(why: string): string {
  return `The tool ran, but its output could not be kept: ${why}. Return plain JSON from the tool to keep it.`;
}
