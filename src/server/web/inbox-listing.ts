import type { ApprovalStatus } from '../../core/approval.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import type { ApprovalQuery } from '../../requests/request-list.ts';
import { pageApprovals } from '../approval-views.ts';
import type { ServerContext } from '../server-context.ts';
import type { RowsPage } from './list-page.ts';
import type { ListQuery } from './list-query.ts';

/**
 * One page of the list (`scope.status` pending) or the history (decided requests, latest
 * decision first), through the same mapping onto the store's keyset page as the API and the
 * CLI (pageApprovals → toPageQuery): the store filters, orders, counts (up to its cap) and
 * stops after `limit` rows, so the page reads what it shows whatever the backlog. Nothing is
 * loaded whole and cut here. Overdue requests are not pending there, even before the sweep.
 */
export async function pageOfRows(
  ctx: Pick<ServerContext, 'requestBook' | 'agents' | 'requests'>,
  query: ListQuery,
  scope: { status?: ApprovalStatus },
  now: Date,
): Promise<RowsPage> {
  const status = scope.status ?? ((query.status || undefined) as ApprovalStatus | undefined);
  const listQuery: ApprovalQuery = {
    ...(status ? { status } : { decided: true }),
    ...(query.tool ? { tool: query.tool } : {}),
    ...(query.customer ? { customer: query.customer } : {}),
    ...(query.role ? { role: query.role } : {}),
    ...(query.q ? { text: query.q } : {}),
    sort: query.sort,
    ...(query.after ? { after: query.after } : {}),
    limit: query.limit,
    count: true,
  };
  const read = async (q: ApprovalQuery, restarted: boolean): Promise<RowsPage> => {
    const page = await pageApprovals(ctx.requestBook, ctx, q, now);
    return {
      views: page.items,
      total: page.total ?? { count: page.items.length, exact: page.next === null },
      next: page.next,
      restarted,
    };
  };
  try {
    return await read(listQuery, false);
  } catch (error) {
    // A page link that does not fit (another sort, other filters: a person edited the address
    // or kept a link from before; cut short): the first page is always safe.
    if (!CountersignError.is(error) || error.code !== 'INVALID_CURSOR' || !query.after) throw error;
    const { after: _after, ...first } = listQuery;
    // The pager's links are built from the query: they start from this first page too.
    query.after = '';
    query.page = 1;
    return read(first, true);
  }
}
