import type { ApprovalRequest } from '../core/approval.ts';
import type { ApprovalFilter, Store } from '../store/store.ts';

/** What the surfaces read requests through: a store's request rows. */
export type RequestReader = Pick<Store, 'getApproval' | 'listApprovals'>;

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
    async listApprovals(filter?: ApprovalFilter) {
      const lists = await Promise.all(distinct.map((book) => book.listApprovals(filter)));
      return lists.flat().sort(byCreation);
    },
  };
}

const byCreation = (a: ApprovalRequest, b: ApprovalRequest) =>
  a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id);

/** Whether a checkpoint store also keeps request rows (every backend does once it holds port requests). */
export function isRequestReader(value: unknown): value is RequestReader {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { getApproval?: unknown }).getApproval === 'function' &&
    typeof (value as { listApprovals?: unknown }).listApprovals === 'function'
  );
}
