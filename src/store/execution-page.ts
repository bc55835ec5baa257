import { InvalidCursorError } from '../core/errors/invalid-cursor-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import type { ExecutionRecord } from '../core/execution.ts';
import { type CursorFilters, decodeKeysetCursor, encodeKeysetCursor } from './keyset-cursor.ts';
import type { ExecutionFilter } from './ports/ledger.ts';
import { MAX_PAGE_LIMIT } from './request-page.ts';

/** Checks a ledger page's limit (INVALID_INPUT) before any backend reads a row. */
export function assertExecutionFilter(filter: ExecutionFilter): void {
  const { limit } = filter;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT))
    throw new InvalidInputError(
      `A ledger page limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}; got ${String(limit)}.`,
    );
}

/** The ledger filter over rows in memory: the reference the SQL backends match. */
export function executionsInMemory(
  rows: Iterable<ExecutionRecord>,
  filter: ExecutionFilter,
): ExecutionRecord[] {
  assertExecutionFilter(filter);
  const { after } = filter;
  const matching = [...rows]
    .filter(
      (record) =>
        (filter.session === undefined || record.session === filter.session) &&
        (filter.status === undefined || record.status === filter.status) &&
        (after === undefined ||
          record.startedAt > after.startedAt ||
          (record.startedAt === after.startedAt && record.requestId > after.requestId)),
    )
    .sort((a, b) =>
      a.startedAt === b.startedAt ? (a.requestId < b.requestId ? -1 : 1) : a.startedAt < b.startedAt ? -1 : 1,
    );
  return filter.limit === undefined ? matching : matching.slice(0, filter.limit);
}

/** The ledger's cursor order: apart from every request and run cursor's. */
const LEDGER_ORDER = 'ledger';

/**
 * What a ledger cursor is bound to: `session` and `status`, the filters that select rows.
 * Not a filter: `limit` (a client may change the page size between pages) and `after`.
 */
function cursorFilters(filter: ExecutionFilter): CursorFilters {
  return { session: filter.session, status: filter.status };
}

/**
 * The ledger's page cursor, in the one keyset format (keyset-cursor.ts): opaque to callers,
 * bound to the filter it was handed out under.
 */
export function encodeExecutionCursor(
  record: Pick<ExecutionRecord, 'startedAt' | 'requestId'>,
  filter: ExecutionFilter,
): string {
  return encodeKeysetCursor(LEDGER_ORDER, record.startedAt, record.requestId, cursorFilters(filter));
}

/** The position after which the next page starts; INVALID_CURSOR when not handed out for `filter`. */
export function decodeExecutionCursor(
  cursor: string,
  filter: ExecutionFilter,
): { startedAt: string; requestId: string } {
  const { key, id } = decodeKeysetCursor(cursor, {
    order: LEDGER_ORDER,
    filters: cursorFilters(filter),
    otherOrder: () =>
      new InvalidCursorError('The page cursor belongs to another list, not to the execution ledger.', {
        hint: 'Pass the `next` of a page of executions, or start again without a cursor.',
      }),
  });
  return { startedAt: key, requestId: id };
}
