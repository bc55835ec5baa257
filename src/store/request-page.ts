import type { ApprovalRequest } from '../core/approval.ts';
import { InvalidCursorError } from '../core/errors/invalid-cursor-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { unsearchable } from '../core/storable-text.ts';
import { type CursorFilters, decodeKeysetCursor, encodeKeysetCursor } from './keyset-cursor.ts';
import type { PageTotal, RequestPage, RequestPageQuery, RequestSort } from './ports/request-book.ts';

// Paging rules once for every backend: the query's validation, the cursor's format, what a
// partial match is, and the page over rows in memory (the memory and file stores). The SQL
// backends build their statement from the same rules in sql/request-page-sql.ts.

/** The largest page any backend serves. */
export const MAX_PAGE_LIMIT = 1000;

/**
 * Counting stops here: a count of every match would read every match (100,000 index entries
 * at 100,000 waiting, several times the page itself), so past the cap a page says "at least
 * 1,000" and stays as cheap at 100,000 waiting as at 100. See docs/benchmarks.md.
 */
export const PAGE_COUNT_CAP = 1000;

/** The longest needle of a partial match, in characters (code points). */
export const MAX_NEEDLE_LENGTH = 1000;

export const REQUEST_SORTS: readonly RequestSort[] = ['oldest', 'newest', 'expiring', 'decided'];

/** A validated query: the sort resolved, the cursor decoded, the partial matches folded. */
export interface PagePlan {
  sort: RequestSort;
  limit: number;
  count: boolean;
  after: { key: string; id: string } | null;
  exact: {
    status?: string;
    kind?: string;
    session?: string;
    run?: string;
    role?: string;
  };
  openAt?: string;
  /** Lower-case (ASCII) needles for the partial matches. */
  partial: { tool?: string; customer?: string; text?: string };
}

/** ASCII case folding: what SQLite's LIKE and PostgreSQL's lower() on "C" text agree on. */
export function foldCase(value: string): string {
  return value.replace(/[A-Z]/g, (letter) => letter.toLowerCase());
}

/** A LIKE pattern for "contains `needle`", with `\` as the escape character. */
export function containsPattern(needle: string): string {
  return `%${needle.replace(/[\\%_]/g, (special) => `\\${special}`)}%`;
}

function nonEmpty(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/**
 * A partial match's needle, trimmed, or undefined when blank. Refused (INVALID_INPUT) where
 * the backends would answer differently or not at all: a NUL (SQLite's LIKE ends its pattern
 * there, so "a<NUL>b" matched every text ending in "a"; PostgreSQL text cannot hold one), half
 * of a surrogate pair (half an emoji to the memory stores, U+FFFD once encoded for SQL), and a
 * needle over MAX_NEEDLE_LENGTH characters (SQLite refuses a LIKE pattern over 50,000 bytes).
 */
function needle(name: string, value: string | undefined): string | undefined {
  const trimmed = nonEmpty(value);
  if (trimmed === undefined) return undefined;
  const hint = `Search for plain text (letters, digits, punctuation), at most ${MAX_NEEDLE_LENGTH} characters.`;
  const unfit = unsearchable(trimmed);
  if (unfit !== null) throw new InvalidInputError(`The ${name} search cannot hold ${unfit}.`, { hint });
  // Counted by code point only when it may be too long (an emoji is two UTF-16 units).
  const length = trimmed.length > MAX_NEEDLE_LENGTH ? [...trimmed].length : trimmed.length;
  if (length > MAX_NEEDLE_LENGTH)
    throw new InvalidInputError(
      `The ${name} search is ${length} characters long; at most ${MAX_NEEDLE_LENGTH} are searched.`,
      { hint },
    );
  return trimmed;
}

/** Checks the query (INVALID_INPUT, INVALID_CURSOR) before any backend reads a row. */
export function planPage(query: RequestPageQuery): PagePlan {
  const sort = query.sort ?? 'oldest';
  if (!REQUEST_SORTS.includes(sort)) {
    throw new InvalidInputError(`Unknown sort "${String(sort)}".`, {
      hint: `Use one of ${REQUEST_SORTS.join(', ')}.`,
    });
  }
  if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_PAGE_LIMIT) {
    throw new InvalidInputError(
      `A page limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}; got ${String(query.limit)}.`,
      {
        hint: `Ask for at most ${MAX_PAGE_LIMIT} and follow \`next\` for more.`,
      },
    );
  }
  if (sort === 'expiring' && query.status !== undefined && query.status !== 'pending') {
    throw new InvalidInputError(
      'Sort "expiring" lists waiting requests only; it cannot be combined with status.',
      {
        hint: 'Leave status out (or pending), or sort by oldest, newest or decided.',
      },
    );
  }
  if (sort === 'decided' && query.status === 'pending') {
    throw new InvalidInputError(
      'Sort "decided" lists decided requests only; pending ones have no decision yet.',
      {
        hint: 'Sort waiting requests by oldest, newest or expiring.',
      },
    );
  }
  const status = sort === 'expiring' ? 'pending' : query.status;
  const tool = needle('tool', query.tool);
  const customer = needle('customer', query.customer);
  const text = needle('text', query.text);
  const filters: PageFilters = {
    exact: {
      ...(status === undefined ? {} : { status }),
      ...(query.kind === undefined ? {} : { kind: query.kind }),
      ...(query.session === undefined ? {} : { session: query.session }),
      ...(query.run === undefined ? {} : { run: query.run }),
      ...(query.role === undefined ? {} : { role: query.role }),
    },
    partial: {
      ...(tool === undefined ? {} : { tool: foldCase(tool) }),
      ...(customer === undefined ? {} : { customer: foldCase(customer) }),
      ...(text === undefined ? {} : { text: foldCase(text) }),
    },
  };
  return {
    sort,
    limit: query.limit,
    count: query.count === true,
    after: query.after === undefined || query.after === '' ? null : decodeCursor(query.after, sort, filters),
    ...filters,
    ...(query.openAt === undefined ? {} : { openAt: query.openAt }),
  };
}

/** The filters of a plan, as the cursor binds them. */
type PageFilters = Pick<PagePlan, 'exact' | 'partial'>;

/**
 * What a request cursor is bound to: every filter that selects rows, as the plan applies it
 * (needles trimmed and folded, so `tool=Refund` and `tool=refund ` are one list; blank
 * needles are none). Not a filter here: `limit` (a client may change the page size between
 * pages), `count`, `sort` (the cursor's order already names it; `expiring` implies pending
 * either way) and `openAt`, which is the reader's clock, not the client's choice, and moves
 * between every two pages.
 */
function cursorFilters(plan: PageFilters): CursorFilters {
  return { ...plan.exact, ...plan.partial };
}

/** The value a request is ordered by under `sort` (ties broken by id). */
export function sortKey(request: ApprovalRequest, sort: RequestSort): string {
  if (sort === 'expiring') return request.expiresAt;
  if (sort === 'decided') return request.decision?.at ?? '';
  return request.createdAt;
}

export function descending(sort: RequestSort): boolean {
  return sort === 'newest' || sort === 'decided';
}

/**
 * Opaque to callers; it names the sort so a cursor is never read under another order, and
 * carries the digest of the plan's filters so it is never read under other filters.
 */
export function encodeCursor(
  request: ApprovalRequest,
  plan: Pick<PagePlan, 'sort' | 'exact' | 'partial'>,
): string {
  return encodeKeysetCursor(plan.sort, sortKey(request, plan.sort), request.id, cursorFilters(plan));
}

export function decodeCursor(
  cursor: string,
  sort: RequestSort,
  filters: PageFilters,
): { key: string; id: string } {
  return decodeKeysetCursor(cursor, {
    order: sort,
    filters: cursorFilters(filters),
    otherOrder: (order) =>
      new InvalidCursorError(`The page cursor belongs to sort "${order}", not "${sort}".`, {
        hint: 'Keep the sort of the first page while following `next`, or start again without a cursor.',
      }),
  });
}

/** Whether a request matches the plan's filters (the cursor aside). */
export function matchesPlan(request: ApprovalRequest, plan: PagePlan): boolean {
  const { exact, partial } = plan;
  if (plan.sort === 'decided' && request.decision === null) return false;
  if (exact.status !== undefined && request.status !== exact.status) return false;
  if (exact.kind !== undefined && request.kind !== exact.kind) return false;
  if (exact.session !== undefined && request.session !== exact.session) return false;
  if (exact.run !== undefined && request.run !== exact.run) return false;
  if (exact.role !== undefined && request.requiredRole !== exact.role) return false;
  if (plan.openAt !== undefined && request.status === 'pending' && request.expiresAt <= plan.openAt)
    return false;
  const contains = (value: string | null, needle: string) =>
    value !== null && foldCase(value).includes(needle);
  if (partial.tool !== undefined && !contains(request.tool, partial.tool)) return false;
  if (partial.customer !== undefined && !contains(request.customer, partial.customer)) return false;
  if (
    partial.text !== undefined &&
    !contains(request.effect, partial.text) &&
    !contains(request.customer, partial.text)
  )
    return false;
  return true;
}

/** Byte order, as the SQL backends compare their "C" text. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The order of `sort`, as a comparator. */
export function pageOrder(sort: RequestSort): (a: ApprovalRequest, b: ApprovalRequest) => number {
  const sign = descending(sort) ? -1 : 1;
  return (a, b) => sign * (compareText(sortKey(a, sort), sortKey(b, sort)) || compareText(a.id, b.id));
}

/** Whether `request` comes after the cursor in the plan's order. */
export function afterCursor(request: ApprovalRequest, plan: PagePlan): boolean {
  if (plan.after === null) return true;
  const order =
    compareText(sortKey(request, plan.sort), plan.after.key) || compareText(request.id, plan.after.id);
  return descending(plan.sort) ? order < 0 : order > 0;
}

/**
 * The page from up to `limit + 1` rows already in order after the cursor: the extra row only
 * says there is a next page.
 */
export function pageOf(rows: readonly ApprovalRequest[], plan: PagePlan, total?: number): RequestPage {
  return keysetPage(rows, plan.limit, (last) => encodeCursor(last, plan), total);
}

/**
 * Any keyset page (requests, runs) from up to `limit + 1` rows in order after the cursor: the
 * extra row only says there is more; `total` (when counted) is capped at PAGE_COUNT_CAP.
 */
export function keysetPage<T>(
  rows: readonly T[],
  limit: number,
  cursorOf: (last: T) => string,
  total?: number,
): { items: T[]; next: string | null; total?: PageTotal } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return {
    items,
    next: rows.length > limit && last !== undefined ? cursorOf(last) : null,
    ...(total === undefined
      ? {}
      : { total: { count: Math.min(total, PAGE_COUNT_CAP), exact: total <= PAGE_COUNT_CAP } }),
  };
}

/** A page over rows held in memory (the memory and file stores): the same answer SQL gives. */
export function pageInMemory(rows: Iterable<ApprovalRequest>, query: RequestPageQuery): RequestPage {
  const plan = planPage(query);
  const matching = [...rows].filter((request) => matchesPlan(request, plan));
  const after = matching.filter((request) => afterCursor(request, plan)).sort(pageOrder(plan.sort));
  return pageOf(
    after.slice(0, plan.limit + 1),
    plan,
    plan.count ? Math.min(matching.length, PAGE_COUNT_CAP + 1) : undefined,
  );
}
