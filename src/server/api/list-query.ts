import type { Context } from 'hono';
import { z } from 'zod';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import { MAX_PAGE_LIMIT, REQUEST_SORTS } from '../../store/request-page.ts';
import type { ApprovalQuery, HttpRequestPage } from '../approval-views.ts';
import { queryText } from '../http/read-json.ts';
import { approvalStatus } from './schemas.ts';

const requestKind = z.enum(['tool-call', 'port']);
const requestSort = z.enum(REQUEST_SORTS as [string, ...string[]]);

/** The page size of a list when `?limit=` is absent. */
export const DEFAULT_PAGE_SIZE = 200;

export function parseLimit(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  // Decimal digits only, as the CLI's --limit: Number() alone takes 1e2, 0x10, " 7" and 1.0.
  const limit = /^\d{1,4}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT)
    throw new InvalidInputError(`limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}.`, {
      hint: 'Follow the Link header (rel="next") for the rest.',
    });
  return limit;
}

function parsed<T>(
  name: string,
  text: string | undefined,
  schema: z.ZodType<T>,
  allowed: string,
): T | undefined {
  if (text === undefined) return undefined;
  const result = schema.safeParse(text);
  if (!result.success) throw new InvalidInputError(`${name} must be ${allowed}, not ${text}.`);
  return result.data;
}

/**
 * The one reading of a request list's query string (GET /v1/requests, its /v1/approvals
 * alias): filters, sort, cursor, page size and whether to count.
 */
export function readListQuery(c: Context): ApprovalQuery {
  const status = parsed(
    'status',
    queryText(c, 'status'),
    approvalStatus,
    'pending, approved, rejected, answered or expired',
  );
  const kind = parsed('kind', queryText(c, 'kind'), requestKind, 'tool-call or port');
  const sort = parsed('sort', queryText(c, 'sort'), requestSort, REQUEST_SORTS.join(', ')) as
    | ApprovalQuery['sort']
    | undefined;
  const count = queryText(c, 'count');
  if (count !== undefined && count !== 'true' && count !== 'false')
    throw new InvalidInputError(`count must be true or false, not ${count}.`);
  const text = (name: 'session' | 'run' | 'tool' | 'customer' | 'role' | 'text' | 'after') => {
    const value = queryText(c, name);
    return value === undefined ? {} : { [name]: value };
  };
  return {
    ...(status ? { status } : {}),
    ...(kind ? { kind } : {}),
    ...(sort ? { sort } : {}),
    ...text('session'),
    ...text('run'),
    ...text('tool'),
    ...text('customer'),
    ...text('role'),
    ...text('text'),
    ...text('after'),
    ...(count === 'true' ? { count: true } : {}),
    limit: parseLimit(queryText(c, 'limit'), DEFAULT_PAGE_SIZE),
  };
}

/**
 * The cursor travels in headers, so a list's body stays the array it always was: `Link`
 * (RFC 8288, rel="next": this URL with `after` set) and `X-Next-Cursor`; with `?count=true`,
 * `X-Total-Count` and, when the count stopped at its cap, `X-Total-Capped: true`.
 */
export function setPageHeaders(c: Context, page: Pick<HttpRequestPage, 'next' | 'total'>): void {
  if (page.next !== null) {
    const url = new URL(c.req.url);
    url.searchParams.set('after', page.next);
    c.header('Link', `<${url.pathname}${url.search}>; rel="next"`);
    c.header('X-Next-Cursor', page.next);
  }
  if (page.total !== undefined) {
    c.header('X-Total-Count', String(page.total.count));
    if (!page.total.exact) c.header('X-Total-Capped', 'true');
  }
}
