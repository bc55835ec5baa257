import { toApprovalView } from '../../agent/views.ts';
import type { ApprovalStatus } from '../../core/approval.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import type { RequestPage, RequestPageQuery } from '../../store/ports/request-book.ts';
import { enrich } from '../approval-views.ts';
import type { ServerContext } from '../server-context.ts';
import type { RowsPage } from './list-page.ts';
import type { ListQuery } from './list-query.ts';

/**
 * One page of the list (`scope.status` pending) or the history (the store's `decided` sort
 * lists decided requests only), straight from the store's keyset paging: the store
 * filters, orders, counts (up to its cap) and stops after `limit` rows, so the page reads
 * what it shows whatever the backlog. Nothing is loaded whole and cut here.
 */
export async function pageOfRows(
  ctx: Pick<ServerContext, 'requestBook' | 'agents' | 'requests'>,
  query: ListQuery,
  scope: { status?: ApprovalStatus },
  now: Date,
): Promise<RowsPage> {
  const status = scope.status ?? ((query.status || undefined) as ApprovalStatus | undefined);
  const pageQuery: RequestPageQuery = {
    ...(status ? { status } : {}),
    ...(query.tool ? { tool: query.tool } : {}),
    ...(query.customer ? { customer: query.customer } : {}),
    ...(query.role ? { role: query.role } : {}),
    ...(query.q ? { text: query.q } : {}),
    sort: query.sort,
    ...(query.after ? { after: query.after } : {}),
    limit: query.limit,
    count: true,
  };
  let page: Awaited<ReturnType<typeof ctx.requestBook.pageRequests>>;
  try {
    page = await ctx.requestBook.pageRequests(pageQuery);
  } catch (error) {
    // A page link from before (another sort, cut short): the first page is always safe.
    if (!CountersignError.is(error) || error.code !== 'INVALID_CURSOR' || !query.after) throw error;
    const { after: _after, ...first } = pageQuery;
    // The pager's links are built from the query: they start from this first page too.
    query.after = '';
    query.page = 1;
    page = await ctx.requestBook.pageRequests(first);
    return { ...(await rowsOf(ctx, page, scope, now)), restarted: true };
  }
  return rowsOf(ctx, page, scope, now);
}

async function rowsOf(
  ctx: Pick<ServerContext, 'agents' | 'requests'>,
  page: RequestPage,
  scope: { status?: ApprovalStatus },
  now: Date,
): Promise<RowsPage> {
  const at = now.toISOString();
  // A row past its expiry that the sweep has not written yet reads as expired: the list
  // leaves it out (the sweep answers it within seconds), the history shows it.
  const views = page.items
    .map((request) => toApprovalView(request, at))
    .filter((view) => scope.status !== 'pending' || view.status === 'pending');
  return {
    views: enrich(ctx, views),
    total: page.total ?? { count: views.length, exact: page.next === null },
    next: page.next,
    restarted: false,
  };
}
