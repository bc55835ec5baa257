import type { Context } from 'hono';
import { z } from 'zod';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import { parseJsonText } from '../../core/parse-json.ts';
import { readBodyText } from './read-body-text.ts';

/**
 * A JSON request body, validated. Only `application/json` is read: a cross-site form cannot
 * send that type without a CORS preflight, which this server never answers.
 */
export async function readJson<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
    throw new InvalidInputError('The request body must be JSON.', {
      hint: 'Send it with Content-Type: application/json.',
    });
  }
  const parsed = parseJsonText(await readBodyText(c), 'The request body');
  const result = schema.safeParse(parsed);
  if (!result.success) {
    throw new InvalidInputError(
      `The request body is not valid: ${z.prettifyError(result.error).replace(/\n/g, ' ')}`,
    );
  }
  return result.data;
}

/** Query parameters are strings; an empty one counts as absent. */
export function queryText(c: Context, name: string): string | undefined {
  const value = c.req.query(name);
  return value === undefined || value === '' ? undefined : value;
}

/** A whole-number query parameter (a cursor, a page size); absent is undefined, anything else 400. */
export function queryWholeNumber(c: Context, name: string): number | undefined {
  const value = queryText(c, name);
  if (value === undefined) return undefined;
  if (!/^\d{1,15}$/.test(value))
    throw new InvalidInputError(`?${name}= must be a whole number, not "${value}".`);
  return Number(value);
}
