import { z } from 'zod';
import type { JsonValue } from './json.ts';
import { MAX_JSON_DEPTH, tooDeepMessage } from './json-depth.ts';

/** How the OpenAPI document describes a JSON value (`{}`: anything JSON). */
export const JSON_VALUE_DESCRIPTION = 'Any JSON value';

/**
 * What is wrong with `value` as JSON from outside, or null: nested deeper than
 * MAX_JSON_DEPTH, or holding something JSON cannot (undefined, NaN, a function, a class
 * instance). Walks with its own stack, so no value can exhaust the call stack.
 */
export function jsonProblem(value: unknown, limit = MAX_JSON_DEPTH): string | null {
  const values: unknown[] = [value];
  const depths: number[] = [0];
  while (values.length > 0) {
    const node = values.pop();
    const depth = depths.pop()!;
    if (node === null || typeof node === 'string' || typeof node === 'boolean') continue;
    if (typeof node === 'number') {
      if (!Number.isFinite(node)) return 'A JSON number must be finite.';
      continue;
    }
    if (typeof node !== 'object')
      return node === undefined ? 'A JSON value is required.' : 'Not a JSON value.';
    if (depth + 1 > limit) return tooDeepMessage('The value', limit);
    const proto = Object.getPrototypeOf(node);
    if (!Array.isArray(node) && proto !== Object.prototype && proto !== null) return 'Not a JSON value.';
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      values.push(child);
      depths.push(depth + 1);
    }
  }
  return null;
}

/**
 * Any JSON value, nested at most MAX_JSON_DEPTH levels: the one schema for JSON everywhere
 * (API bodies and responses, imports, run state). Not a recursive union: that recursion is
 * what a deep value overflows, and it becomes `$defs` refs that do not resolve inside an
 * OpenAPI document, which shows this as `{}` (see src/server/api/openapi.ts).
 */
export const jsonValue: z.ZodType<JsonValue> = z.custom<JsonValue>().superRefine((value, ctx) => {
  const problem = jsonProblem(value);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
});
