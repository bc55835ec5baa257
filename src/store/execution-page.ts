import { InvalidCursorError } from '../core/errors/invalid-cursor-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import type { ExecutionRecord } from '../core/execution.ts';
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

/** The ledger's page cursor: opaque to callers, versioned, refused (INVALID_CURSOR) when not ours. */
export function encodeExecutionCursor(record: Pick<ExecutionRecord, 'startedAt' | 'requestId'>): string {
  return Buffer.from(JSON.stringify([1, 'ledger', record.startedAt, record.requestId])).toString('base64url');
}

export function decodeExecutionCursor(cursor: string): { startedAt: string; requestId: string } {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url');
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch (cause) {
    throw new InvalidCursorError('The ledger page cursor is not one this listing handed out.', { cause });
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 4 ||
    parsed[0] !== 1 ||
    parsed[1] !== 'ledger' ||
    typeof parsed[2] !== 'string' ||
    typeof parsed[3] !== 'string'
  )
    throw new InvalidCursorError('The ledger page cursor is not one this listing handed out.');
  return { startedAt: parsed[2], requestId: parsed[3] };
}
