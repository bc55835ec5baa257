import type { ApprovalStatus, RequestKind } from '../core/approval.ts';
import { MAX_PAGE_LIMIT } from '../store/request-page.ts';
import type { RequestPageQuery, RequestSort } from '../store/store.ts';

/**
 * A list of requests as every surface asks for it (the API, the inbox, the CLI's pending and
 * history), and the one mapping of it onto the store's keyset page.
 */
export interface ApprovalQuery {
  status?: ApprovalStatus;
  kind?: RequestKind;
  session?: string;
  run?: string;
  /** Partial, any case (as customer and text). */
  tool?: string;
  customer?: string;
  role?: string;
  /** Over the effect and the customer. */
  text?: string;
  /** Only requests that are no longer pending (the history). */
  decided?: boolean;
  /** Default: pending oldest first, decided (or a decided status) latest decision first, all newest first. */
  sort?: RequestSort;
  /** The `next` cursor of the page before. */
  after?: string;
  /** Default and at most MAX_PAGE_LIMIT. */
  limit?: number;
  /** Count the matches (capped, see PAGE_COUNT_CAP). */
  count?: boolean;
}

/** The store query behind a list: the one place a surface's list becomes a keyset page. */
export function toPageQuery(query: ApprovalQuery, now: Date): RequestPageQuery {
  const decided = query.decided === true || (query.status !== undefined && query.status !== 'pending');
  const sort = query.sort ?? (query.status === 'pending' ? 'oldest' : decided ? 'decided' : 'newest');
  return {
    ...(query.status ? { status: query.status } : {}),
    ...(query.kind ? { kind: query.kind } : {}),
    ...(query.session ? { session: query.session } : {}),
    ...(query.run ? { run: query.run } : {}),
    ...(query.tool ? { tool: query.tool } : {}),
    ...(query.customer ? { customer: query.customer } : {}),
    ...(query.role ? { role: query.role } : {}),
    ...(query.text ? { text: query.text } : {}),
    ...(query.after ? { after: query.after } : {}),
    ...(query.count ? { count: true } : {}),
    // Overdue requests are never "pending", even before the sweep marks them expired.
    ...(query.status === 'pending' || sort === 'expiring' ? { openAt: now.toISOString() } : {}),
    sort,
    limit: query.limit ?? MAX_PAGE_LIMIT,
  };
}
