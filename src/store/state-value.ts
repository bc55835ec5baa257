import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import type { JsonValue } from '../core/json.ts';
import { plainJson } from '../core/plain-json.ts';

/**
 * The value an AppState backend stores for `namespace`/`key`: plain JSON (plain-json.ts), so
 * every backend reads back the same (a Date its ISO text, NaN null, on memory as on SQL), and
 * a value with no JSON form is refused with INVALID_INPUT before anything is written, instead
 * of a driver's TypeError, a NOT NULL violation reported as a conflict, or, on memory, an
 * `undefined` that then reads as an absent key. Every AppState backend calls it first.
 */
export function stateValue(namespace: string, key: string, value: unknown): JsonValue {
  const plain = plainJson(value);
  if (plain.ok) return plain.json;
  throw new InvalidInputError(
    `The value for state ${JSON.stringify(namespace)}/${JSON.stringify(key)} cannot be stored: ${plain.problem}.`,
    {
      hint: 'Store plain JSON: objects, arrays, strings, numbers, booleans and null (null to say "nothing", not undefined).',
    },
  );
}
