import { InvalidInputError } from './errors/invalid-input-error.ts';
import type { JsonValue } from './json.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeepMessage } from './json-depth.ts';

/**
 * JSON text from outside (a request body, a CLI argument, a file), parsed and held to
 * MAX_JSON_DEPTH. Malformed or too deep text is INVALID_INPUT naming `what`.
 */
export function parseJsonText(text: string, what: string, options: { hint?: string } = {}): JsonValue {
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(text) as JsonValue;
  } catch {
    throw new InvalidInputError(`${what} is not valid JSON.`, options);
  }
  if (nestsDeeperThan(parsed, MAX_JSON_DEPTH)) throw new InvalidInputError(tooDeepMessage(what));
  return parsed;
}
