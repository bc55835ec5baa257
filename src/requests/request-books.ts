import type { ApprovalRequest } from '../core/approval.ts';
import { mergeStats } from '../store/decision-stats.ts';
import { encodeCursor, PAGE_COUNT_CAP, pageOrder, planPage } from '../store/request-page.ts';
import type { ApprovalFilter, RequestPage, RequestPageQuery, StatsQuery, Store } from '../store/store.ts';

/** What the surfaces read requests through: a store's request rows. */
export type RequestReader = Pick<
  Store,
  'getApproval' | 'getApprovalWithSession' | 'listApprovals' | 'pageRequests' | 'decisionStats'
>;

/**
 * Requests kept in more than one place read as one book. With SQLite or PostgreSQL the
 * agents' store keeps workflow runs too, and this is that one store. Runs kept apart from
 * the agents (a memory or file checkpoint store beside a memory store) hold their port
 * requests themselves; the inbox, the API and the CLI still see one list. Ids are unique
 * across books (random), so the first book that has an id owns it.
 */
export function requestBooks(books: ReadonlyArray<RequestReader | null | undefined>): RequestReader {
  const distinct = [...new Set(books.filter((book): book is RequestReader => book != null))];
  if (distinct.length === 1) return distinct[0] as RequestReader;
  return {
    async getApproval(id) {
      for (const book of distinct) {
        const found = await book.getApproval(id);
        if (found) return found;
      }
      return null;
    },
    async getApprovalWithSession(id) {
      for (const book of distinct) {
        if (book.getApprovalWithSession === undefined) {
          const request = await book.getApproval(id);
          // A book that keeps no sessions (a checkpoint store's port requests).
          if (request) return { request, session: null };
          continue;
        }
        const found = await book.getApprovalWithSession(id);
        if (found) return found;
      }
      return null;
    },
    async listApprovals(filter?: ApprovalFilter) {
      const lists = await Promise.all(distinct.map((book) => book.listApprovals(filter)));
      return lists.flat().sort(byCreation);
    },
    async decisionStats(query: StatsQuery) {
      return mergeStats(query, await Promise.all(distinct.map((book) => book.decisionStats(query))));
    },
    async pageRequests(query: RequestPageQuery) {
      return mergePages(query, await Promise.all(distinct.map((book) => book.pageRequests(query))));
    },
  };
}

/**
 * One page from each book's page for the same query. A cursor is a position in the order
 * (key, id), not in a book, so the merged page's cursor resumes every book at once.
 */
export function mergePages(query: RequestPageQuery, pages: readonly RequestPage[]): RequestPage {
  const plan = planPage(query);
  const merged = pages.flatMap((page) => page.items).sort(pageOrder(plan.sort));
  const items = merged.slice(0, plan.limit);
  const more = merged.length > plan.limit || pages.some((page) => page.next !== null);
  const last = items[items.length - 1];
  const page: RequestPage = {
    items,
    next: more && last !== undefined ? encodeCursor(last, plan) : null,
  };
  if (pages.every((each) => each.total !== undefined)) {
    const count = pages.reduce((sum, each) => sum + (each.total?.count ?? 0), 0);
    const exact = pages.every((each) => each.total?.exact === true) && count <= PAGE_COUNT_CAP;
    page.total = { count: Math.min(count, PAGE_COUNT_CAP), exact };
  }
  return page;
}

const byCreation = (a: ApprovalRequest, b: ApprovalRequest) =>
  a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id);

/** Whether a checkpoint store also keeps request rows (every backend does once it holds port requests). */
export function isRequestReader(value: unknown): value is RequestReader {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { getApproval?: unknown }).getApproval === 'function' &&
    typeof (value as { listApprovals?: unknown }).listApprovals === 'function' &&
    typeof (value as { pageRequests?: unknown }).pageRequests === 'function' &&
    typeof (value as { decisionStats?: unknown }).decisionStats === 'function'
  );
}
