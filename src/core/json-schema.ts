import { z } from 'zod';
import type { JsonValue } from './json.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeepMessage } from './json-depth.ts';

// The recursion sits in the items (not around the union): the OpenAPI document generated
// from this schema stays exactly as it was when every file had its own copy.
const jsonTree: z.ZodType<JsonValue> = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  z.null(),
  z.array(z.lazy(() => jsonTree)),
  z.record(
    z.string(),
    z.lazy(() => jsonTree),
  ),
]);

/**
 * Any JSON value, nested at most MAX_JSON_DEPTH levels. The depth is checked first, without
 * recursion, so the recursive validation below it never runs on a value deep enough to
 * exhaust the stack. The one schema for JSON everywhere (API bodies, imports, run state).
 */
export const jsonValue: z.ZodType<JsonValue> = z.preprocess((value, ctx) => {
  if (nestsDeeperThan(value, MAX_JSON_DEPTH))
    ctx.addIssue({ code: 'custom', message: tooDeepMessage('The value') });
  return value;
}, jsonTree);
