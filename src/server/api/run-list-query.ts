import type { Context } from 'hono';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import {
  RUN_STATUSES,
  type RunPageQuery,
  type RunSort,
  type RunStatus,
} from '../../store/checkpoint-store.ts';
import { RUN_SORTS } from '../../store/run-page.ts';
import { queryText } from '../http/read-json.ts';
import { DEFAULT_PAGE_SIZE, parseLimit } from './list-query.ts';

function oneOf<T extends string>(
  name: string,
  allowed: readonly T[],
  text: string | undefined,
): T | undefined {
  if (text === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(text))
    throw new InvalidInputError(`${name} must be ${allowed.join(', ')}, not ${text}.`);
  return text as T;
}

/**
 * The one reading of GET /v1/runs' query string: exact filters (status, workflow, customer),
 * sort (newest first by default), cursor, page size and whether to count. The page goes back
 * with the request lists' headers (setPageHeaders: Link, X-Next-Cursor, X-Total-Count).
 */
export function readRunListQuery(c: Context): RunPageQuery {
  const status = oneOf<RunStatus>('status', RUN_STATUSES, queryText(c, 'status'));
  const sort = oneOf<RunSort>('sort', RUN_SORTS, queryText(c, 'sort'));
  const count = queryText(c, 'count');
  if (count !== undefined && count !== 'true' && count !== 'false')
    throw new InvalidInputError(`count must be true or false, not ${count}.`);
  const text = (name: 'workflow' | 'customer' | 'after') => {
    const value = queryText(c, name);
    return value === undefined ? {} : { [name]: value };
  };
  return {
    ...(status ? { status } : {}),
    ...(sort ? { sort } : {}),
    ...text('workflow'),
    ...text('customer'),
    ...text('after'),
    ...(count === 'true' ? { count: true } : {}),
    limit: parseLimit(queryText(c, 'limit'), DEFAULT_PAGE_SIZE),
  };
}
