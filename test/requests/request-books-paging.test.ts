import { describe, expect, it } from 'vitest';
import { requestBooks } from '../../src/requests/request-books.ts';
import { checkpoint } from '../../src/store/conformance/checkpoint-store-conformance.ts';
import { at, leasedSession, portRequest, raise, request } from '../../src/store/conformance/fixtures.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';

// Runs kept apart from the agents (a memory checkpoint store beside a memory store): the
// surfaces page both books as one list, and one cursor resumes both.
describe('requestBooks: two books paged as one', () => {
  async function books() {
    const store = createMemoryStore();
    const checkpoints = createMemoryCheckpointStore();
    await leasedSession(store, 's1');
    await raise(store, 's1', [
      request({ id: 't1', session: 's1', createdAt: at(1) }),
      request({ id: 't3', session: 's1', createdAt: at(3) }),
      request({ id: 't5', session: 's1', createdAt: at(5) }),
    ]);
    const saved = await checkpoints.saveCheckpoint(checkpoint('r', 0), null, {
      requests: [portRequest('r', 'p2', { createdAt: at(2) }), portRequest('r', 'p4', { createdAt: at(4) })],
    });
    expect(saved.saved).toBe(true);
    return requestBooks([store, checkpoints]);
  }

  it('merges the pages in order, resumes both books from one cursor, and adds the counts', async () => {
    const book = await books();
    const seen: string[][] = [];
    let after: string | undefined;
    do {
      const page = await book.pageRequests({ limit: 2, count: true, ...(after ? { after } : {}) });
      expect(page.total).toEqual({ count: 5, exact: true });
      seen.push(page.items.map((item) => item.id));
      after = page.next ?? undefined;
    } while (after !== undefined);
    expect(seen).toEqual([['t1', 'p2'], ['t3', 'p4'], ['t5']]);
    const newest = await book.pageRequests({ limit: 3, sort: 'newest' });
    expect(newest.items.map((item) => item.id)).toEqual(['t5', 'p4', 't3']);
  });

  it("binds the merged page's cursor to its filters: both books page on under them, and refuse others", async () => {
    const book = await books();
    const first = await book.pageRequests({ limit: 1, status: 'pending' });
    expect(first.items.map((item) => item.id)).toEqual(['t1']);
    const after = first.next ?? '';
    const rest = await book.pageRequests({ limit: 3, status: 'pending', after });
    expect(rest.items.map((item) => item.id)).toEqual(['p2', 't3', 'p4']);
    // Under other filters: each book would refuse it; the merged list does.
    await expect(
      book.pageRequests({ limit: 3, kind: 'port', status: 'pending', after }),
    ).rejects.toMatchObject({
      code: 'INVALID_CURSOR',
      message: expect.stringContaining('other filters'),
    });
  });

  it('refuses a bad cursor once, with the typed error', async () => {
    const book = await books();
    await expect(book.pageRequests({ limit: 2, after: '!!' })).rejects.toMatchObject({
      code: 'INVALID_CURSOR',
    });
  });
});
