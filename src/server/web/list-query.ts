/**
 * The inbox's list and history filters, read from the address (so a filtered view is a link
 * a person can share or bookmark) and written back into links (paging, sorting). Pure: the
 * page turns this into the store's paged query; nothing here reads rows.
 */
export type ListSort = 'oldest' | 'newest' | 'expiring' | 'decided';

export interface ListQuery {
  tool: string;
  customer: string;
  role: string;
  /** A status of the page's set (pending page: pending; history: approved, rejected, …). */
  status: string;
  /** Free text matched, case-insensitively, inside the effect and the customer. */
  q: string;
  sort: ListSort;
  /** The keyset cursor of the page to show (opaque; from the store's previous page). */
  after: string;
  /** Which page this is, counting from 1 (carried in links: a keyset cursor has no position). */
  page: number;
  /** Rows per page. */
  limit: number;
}

export const PAGE_SIZES = [25, 50, 100] as const;
export const DEFAULT_PAGE_SIZE = 50;

/** Trimmed and cut to `max` characters: by code point, so an emoji is never cut in half. */
const text = (value: string | undefined, max = 200): string =>
  Array.from((value ?? '').trim())
    .slice(0, max)
    .join('');

export function readListQuery(
  get: (name: string) => string | undefined,
  options: { statuses: readonly string[]; sorts: readonly ListSort[] },
): ListQuery {
  const status = text(get('status'));
  const sort = text(get('sort')) as ListSort;
  const limit = Number(get('limit'));
  const page = Number(get('page'));
  const after = text(get('after'), 500);
  return {
    tool: text(get('tool')),
    customer: text(get('customer')),
    role: text(get('role')),
    status: options.statuses.includes(status) ? status : '',
    q: text(get('q')),
    sort: options.sorts.includes(sort) ? sort : options.sorts[0]!,
    after,
    page: after && Number.isInteger(page) && page > 1 && page < 1_000_000 ? page : 1,
    limit: (PAGE_SIZES as readonly number[]).includes(limit) ? limit : DEFAULT_PAGE_SIZE,
  };
}

/** The address of this view with some parameters changed; defaults are left out. */
export function listHref(
  path: string,
  query: ListQuery,
  change: Partial<ListQuery> = {},
  defaultSort: ListSort = 'oldest',
): string {
  const next = { ...query, ...change };
  const params = new URLSearchParams();
  for (const key of ['q', 'tool', 'customer', 'role', 'status', 'sort', 'after'] as const) {
    const value = next[key];
    // The first page and the page's usual order need no parameter.
    if (value !== '' && !(key === 'sort' && value === defaultSort)) params.set(key, value);
  }
  if (next.after && next.page > 1) params.set('page', String(next.page));
  if (next.limit !== DEFAULT_PAGE_SIZE) params.set('limit', String(next.limit));
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

/** Whether any filter narrows the view (the empty message says so). */
export function isFiltered(query: ListQuery): boolean {
  return Boolean(query.q || query.tool || query.customer || query.role || query.status);
}
