import { expect } from 'vitest';
import type { ApprovalRequest } from '../../core/approval.ts';
import { encodeKeysetCursor } from '../keyset-cursor.ts';
import { MAX_NEEDLE_LENGTH } from '../request-page.ts';
import type { RequestPageQuery, Store } from '../store.ts';
import { at, byPerson, type ConformanceContext, leasedSession, raise, request } from './fixtures.ts';
import { describe, it } from './harness.ts';

/** Every page of `query`, following `next` until it is null. */
async function walk(store: Store, query: RequestPageQuery): Promise<string[][]> {
  const pages: string[][] = [];
  let after: string | undefined;
  for (let guard = 0; guard < 100; guard++) {
    const page = await store.pageRequests({ ...query, ...(after === undefined ? {} : { after }) });
    pages.push(page.items.map((item) => item.id));
    if (page.next === null) return pages;
    after = page.next;
  }
  throw new Error('paging did not end');
}

export function pageCases(ctx: ConformanceContext): void {
  describe('pageRequests', () => {
    // Six requests over two sessions; two share a creation time (the id breaks the tie).
    async function seeded() {
      const store = ctx.store();
      await leasedSession(store, 's1');
      await leasedSession(store, 's2');
      const rows: ApprovalRequest[] = [
        request({ id: 'a', session: 's1', createdAt: at(1), expiresAt: at(400), tool: 'refund_order' }),
        request({
          id: 'b',
          session: 's1',
          createdAt: at(2),
          expiresAt: at(300),
          customer: 'Carol Jones',
          effect: 'Refunds 12.00 on order 1040.',
        }),
        request({ id: 'c', session: 's1', createdAt: at(3), expiresAt: at(200), requiredRole: 'manager' }),
        request({ id: 'e', session: 's2', createdAt: at(4), expiresAt: at(150), tool: 'Cancel_Order' }),
        request({ id: 'd', session: 's2', createdAt: at(4), expiresAt: at(500), customer: 'dave' }),
        request({
          id: 'f',
          session: 's2',
          createdAt: at(5),
          expiresAt: at(250),
          effect: 'Ships 100% of it_now',
        }),
      ];
      await raise(store, 's1', rows.slice(0, 3));
      await raise(store, 's2', rows.slice(3));
      return store;
    }

    it('pages oldest first by default, ties by id, and says when it ends', async () => {
      const store = await seeded();
      expect(await walk(store, { limit: 2 })).toEqual([
        ['a', 'b'],
        ['c', 'd'],
        ['e', 'f'],
      ]);
      const last = await store.pageRequests({ limit: 6 });
      expect(last.items.map((item) => item.id)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
      expect(last.next).toBeNull();
      expect(last.items[1]).toEqual(await store.getApproval('b'));
    });

    it('sorts newest first, by soonest expiry (pending only) and by latest decision (decided only)', async () => {
      const store = await seeded();
      await store.decide('c', byPerson('approved', 20));
      await store.decide('a', byPerson('rejected', 30, 'bob'));
      await store.decide('f', byPerson('approved', 25));
      expect((await walk(store, { limit: 4, sort: 'newest' })).flat()).toEqual([
        'f',
        'e',
        'd',
        'c',
        'b',
        'a',
      ]);
      expect(await walk(store, { limit: 2, sort: 'expiring' })).toEqual([['e', 'b'], ['d']]);
      expect(await walk(store, { limit: 2, sort: 'decided' })).toEqual([['a', 'f'], ['c']]);
      expect((await walk(store, { limit: 5, sort: 'decided', status: 'approved' })).flat()).toEqual([
        'f',
        'c',
      ]);
    });

    it('filters exactly by status, session, kind and role, and partly (any case) by tool, customer and text', async () => {
      const store = await seeded();
      await store.decide('b', byPerson('approved', 20));
      const ids = async (query: Omit<RequestPageQuery, 'limit'>) =>
        (await walk(store, { limit: 2, ...query })).flat();
      expect(await ids({ status: 'pending' })).toEqual(['a', 'c', 'd', 'e', 'f']);
      expect(await ids({ status: 'approved' })).toEqual(['b']);
      expect(await ids({ session: 's2' })).toEqual(['d', 'e', 'f']);
      expect(await ids({ session: 's2', status: 'pending', role: 'manager' })).toEqual([]);
      expect(await ids({ role: 'manager' })).toEqual(['c']);
      expect(await ids({ kind: 'port' })).toEqual([]);
      expect(await ids({ tool: 'REFUND' })).toEqual(['a']);
      expect(await ids({ tool: 'cancel_' })).toEqual(['e']);
      expect(await ids({ customer: 'carol' })).toEqual(['b']);
    });

    it('searches text partly, in any case: the effect preview and the customer (the customer only where effects are sealed)', async () => {
      const store = await seeded();
      await store.decide('b', byPerson('approved', 20));
      const ids = async (query: Omit<RequestPageQuery, 'limit'>) =>
        (await walk(store, { limit: 2, ...query })).flat();
      if (ctx.sealsEffects) {
        // Encrypted at rest: SQL cannot look inside the preview, so its words match nothing,
        // while the customer (clear) still does; nothing errors or matches ciphertext.
        expect(await ids({ text: 'JONES' })).toEqual(['b']);
        expect(await ids({ text: '  DAVE ' })).toEqual(['d']);
        expect(await ids({ text: 'refunds 12' })).toEqual([]);
        expect(await ids({ text: '100%' })).toEqual([]);
        // Nor does the ciphertext's own text (its prefix, the data key id it names).
        expect(await ids({ text: 'cs1t:' })).toEqual([]);
        expect((await store.getApproval('b'))?.effect).toBe('Refunds 12.00 on order 1040.');
        return;
      }
      expect(await ids({ text: 'refunds 12' })).toEqual(['b']);
      expect(await ids({ text: 'JONES' })).toEqual(['b']);
      expect(await ids({ text: '  DAVE ' })).toEqual(['d']);
      // LIKE's wildcards are plain characters in a needle.
      expect(await ids({ text: '100%' })).toEqual(['f']);
      expect(await ids({ text: 'it_now' })).toEqual(['f']);
      expect(await ids({ text: 'i_' })).toEqual([]);
      expect(await ids({ text: '%' })).toEqual(['f']);
      // Case folds in ASCII only, the same on every backend (SQLite's LIKE, lower() on "C" text).
      await raise(store, 's1', [
        request({ id: 'g', session: 's1', createdAt: at(6), effect: 'Adds Crème brûlée.' }),
      ]);
      expect(await ids({ text: 'CRème' })).toEqual(['g']);
      expect(await ids({ text: 'crème BRÛLÉE' })).toEqual([]);
    });

    it('refuses a needle the backends cannot search alike: a NUL, half an emoji, or one too long', async () => {
      const store = await seeded();
      await raise(store, 's1', [
        request({ id: 'g', session: 's1', createdAt: at(6), effect: 'Ships 😀😀😀 now', customer: 'Ann' }),
      ]);
      const refused = async (query: Omit<RequestPageQuery, 'limit'>) => {
        const error = await store.pageRequests({ limit: 2, ...query }).then(
          () => null,
          (thrown: unknown) => thrown,
        );
        expect(error, JSON.stringify(query)).toMatchObject({ code: 'INVALID_INPUT' });
      };
      // SQLite's LIKE ends its pattern at a NUL ("%a" then matched every "…a"), PostgreSQL
      // cannot take one; half of a surrogate pair is half an emoji in memory, U+FFFD in SQL.
      for (const needle of [
        'a\u0000b',
        '\u0000',
        '\ud83d',
        'now \ude00',
        'x'.repeat(MAX_NEEDLE_LENGTH + 1),
      ]) {
        await refused({ text: needle });
        await refused({ customer: needle });
        await refused({ tool: needle });
      }
      // SQLite refused a pattern of over 50,000 bytes with a bare error when a row held its trigram.
      await refused({ text: '😀'.repeat(20_000) });
      // Up to the limit in characters (not UTF-16 units) a needle is searched.
      expect((await store.pageRequests({ limit: 2, text: '😀'.repeat(MAX_NEEDLE_LENGTH) })).items).toEqual(
        [],
      );
      expect(
        (await store.pageRequests({ limit: 2, text: ` ${'x'.repeat(MAX_NEEDLE_LENGTH)} ` })).items,
      ).toEqual([]);
      if (!ctx.sealsEffects)
        expect((await store.pageRequests({ limit: 2, text: '😀😀 N' })).items.map((i) => i.id)).toEqual([
          'g',
        ]);
    });

    it("refuses an effect preview in the sealed form ('cs1t:'), which SQL neither searches nor reads back", async () => {
      const store = await seeded();
      // Stored as written without keys, it read back as ciphertext (CONFIG_ERROR) and broke
      // every list holding it; the text index left it out while the memory stores matched it.
      await expect(
        raise(store, 's1', [request({ id: 'g', session: 's1', effect: 'cs1t:Refunds 40 to Mallory' })]),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(await store.getApproval('g')).toBeNull();
      expect((await store.pageRequests({ limit: 10 })).items).toHaveLength(6);
      // The prefix anywhere else is words like any other.
      await raise(store, 's1', [
        request({ id: 'h', session: 's1', createdAt: at(7), effect: 'Quotes cs1t: to Mallory' }),
      ]);
      expect((await store.getApproval('h'))?.effect).toBe('Quotes cs1t: to Mallory');
      if (!ctx.sealsEffects)
        expect((await store.pageRequests({ limit: 5, text: 'cs1t: to' })).items.map((i) => i.id)).toEqual([
          'h',
        ]);
    });

    it('pages a text search by its cursor in every order, counts it, and finds what is raised meanwhile', async () => {
      const store = await seeded();
      await store.decide('c', byPerson('approved', 20));
      await store.decide('e', byPerson('rejected', 30));
      const ids = async (query: Omit<RequestPageQuery, 'limit'>, limit = 1) =>
        (await walk(store, { limit, ...query })).flat();
      // A customer filter is a partial match too, with or without sealed previews.
      expect(await ids({ customer: 'ONES' })).toEqual(['b']);
      expect(await ids({ customer: 'ONES', text: 'carol' })).toEqual(['b']);
      if (ctx.sealsEffects) {
        expect(await ids({ text: 'COPIES' })).toEqual([]);
        expect((await store.pageRequests({ limit: 1, text: 'copies', count: true })).total).toEqual({
          count: 0,
          exact: true,
        });
        return;
      }
      // 'Orders 2 copies.' is the preview of a, c, d and e.
      expect(await walk(store, { limit: 1, text: 'COPIES' })).toEqual([['a'], ['c'], ['d'], ['e']]);
      expect(await ids({ text: 'copies', sort: 'newest' }, 3)).toEqual(['e', 'd', 'c', 'a']);
      expect(await ids({ text: 'copies', sort: 'decided' })).toEqual(['e', 'c']);
      expect(await ids({ text: 'copies', sort: 'expiring' })).toEqual(['a', 'd']);
      expect(await ids({ text: 'copies', status: 'pending' }, 2)).toEqual(['a', 'd']);
      expect(await ids({ text: 'copies', customer: 'dave' })).toEqual(['d']);
      // Under three characters (no trigram): the same partial match.
      expect(await ids({ text: 'IP' })).toEqual(['f']);
      const counted = await store.pageRequests({ limit: 1, text: 'copies', count: true });
      expect(counted.total).toEqual({ count: 4, exact: true });
      const first = await store.pageRequests({ limit: 2, text: 'copies' });
      expect(first.items.map((item) => item.id)).toEqual(['a', 'c']);
      await raise(store, 's1', [
        request({ id: 'early', session: 's1', createdAt: at(0), effect: 'Orders 9 copies.' }),
        request({ id: 'late', session: 's1', createdAt: at(9), effect: 'Orders 9 COPIES.' }),
      ]);
      expect((await walk(store, { limit: 2, text: 'copies', after: first.next ?? '' })).flat()).toEqual([
        'd',
        'e',
        'late',
      ]);
    });

    it('leaves out pending requests past their expiry when asked for what is open at an instant', async () => {
      const store = await seeded();
      await store.decide('c', byPerson('approved', 20));
      const open = async (query: Omit<RequestPageQuery, 'limit'>) =>
        (await walk(store, { limit: 3, openAt: at(250), ...query })).flat();
      // Expiries: a 400, b 300, c decided, d 500, e 150 and f 250 (both past at 250).
      expect(await open({ status: 'pending' })).toEqual(['a', 'b', 'd']);
      expect(await open({})).toEqual(['a', 'b', 'c', 'd']);
      expect(await open({ sort: 'expiring' })).toEqual(['b', 'a', 'd']);
    });

    it('counts the matches when asked, exactly below the cap', async () => {
      const store = await seeded();
      expect((await store.pageRequests({ limit: 2 })).total).toBeUndefined();
      expect((await store.pageRequests({ limit: 2, count: true })).total).toEqual({ count: 6, exact: true });
      const second = await store.pageRequests({ limit: 2, count: true, session: 's2' });
      expect(second.total).toEqual({ count: 3, exact: true });
      const later = await store.pageRequests({
        limit: 2,
        count: true,
        session: 's2',
        ...(second.next ? { after: second.next } : {}),
      });
      expect(later.total).toEqual({ count: 3, exact: true });
    });

    it('a cursor stays put when requests are raised or decided in between', async () => {
      const store = await seeded();
      const first = await store.pageRequests({ limit: 3, status: 'pending' });
      expect(first.items.map((item) => item.id)).toEqual(['a', 'b', 'c']);
      // Raised before the cursor (an earlier creation time) and after it; one decided ahead of it.
      await raise(store, 's1', [
        request({ id: 'early', session: 's1', createdAt: at(0) }),
        request({ id: 'late', session: 's1', createdAt: at(9) }),
      ]);
      await store.decide('e', byPerson('approved', 20));
      expect((await walk(store, { limit: 2, status: 'pending', after: first.next ?? '' })).flat()).toEqual([
        'd',
        'f',
        'late',
      ]);
    });

    it('binds a cursor to its filters: the same filters page on (any page size), other filters are INVALID_CURSOR', async () => {
      const store = await seeded();
      await store.decide('b', byPerson('approved', 20));
      const ids = (page: { items: ApprovalRequest[] }) => page.items.map((item) => item.id);
      const query = { status: 'pending', tool: 'ORDER' } as const;
      const first = await store.pageRequests({ limit: 2, ...query });
      expect(ids(first)).toEqual(['a', 'c']);
      const after = first.next ?? '';
      expect(after).not.toBe('');
      // The same filters: the next page, whatever the page size, the count, the instant open
      // at (the reader's clock, not a filter) or how a needle is written (trimmed, any case).
      expect(ids(await store.pageRequests({ limit: 2, ...query, after }))).toEqual(['d', 'e']);
      expect(ids(await store.pageRequests({ limit: 1, ...query, after }))).toEqual(['d']);
      expect(
        ids(await store.pageRequests({ limit: 5, ...query, count: true, openAt: at(200), after })),
      ).toEqual(['d', 'f']);
      expect(ids(await store.pageRequests({ limit: 2, status: 'pending', tool: ' order ', after }))).toEqual([
        'd',
        'e',
      ]);
      // Other filters: one dropped, changed or added. Each once gave a page of the other list
      // from this one's position, skipping rows without a word.
      const others: Array<Omit<RequestPageQuery, 'limit'>> = [
        { status: 'pending' },
        { tool: 'ORDER' },
        { status: 'approved', tool: 'ORDER' },
        { status: 'pending', tool: 'refund' },
        { ...query, session: 's2' },
        { ...query, kind: 'tool-call' },
        { ...query, run: 'r' },
        { ...query, role: 'manager' },
        { ...query, customer: 'dave' },
        { ...query, text: 'copies' },
        // The same text under another filter's name is another filter.
        { status: 'pending', customer: 'ORDER' },
      ];
      for (const other of others) {
        await expect(
          store.pageRequests({ limit: 2, ...other, after }),
          JSON.stringify(other),
        ).rejects.toMatchObject({
          code: 'INVALID_CURSOR',
          message: expect.stringMatching(/other filters.*start again from the first page without a cursor/i),
        });
      }
      // Another sort says so, before the filters.
      await expect(store.pageRequests({ limit: 2, ...query, sort: 'newest', after })).rejects.toMatchObject({
        code: 'INVALID_CURSOR',
        message: expect.stringContaining('belongs to sort "oldest", not "newest"'),
      });
      // A cursor of the format before filters were bound is refused, saying why.
      const unbound = Buffer.from(JSON.stringify([1, 'oldest', at(2), 'b'])).toString('base64url');
      await expect(store.pageRequests({ limit: 2, after: unbound })).rejects.toMatchObject({
        code: 'INVALID_CURSOR',
        message: expect.stringMatching(/earlier version.*start again from the first page/i),
      });
    });

    it("refuses a mangled cursor, another sort's cursor and a bad limit, with typed errors", async () => {
      const store = await seeded();
      const page = await store.pageRequests({ limit: 2 });
      const cursor = page.next ?? '';
      await expect(store.pageRequests({ limit: 2, after: 'not a cursor' })).rejects.toMatchObject({
        code: 'INVALID_CURSOR',
      });
      await expect(store.pageRequests({ limit: 2, after: `${cursor.slice(0, -3)}` })).rejects.toMatchObject({
        code: 'INVALID_CURSOR',
      });
      await expect(store.pageRequests({ limit: 2, after: cursor, sort: 'newest' })).rejects.toMatchObject({
        code: 'INVALID_CURSOR',
      });
      // Forged in the cursor's own format (no filters, as the query): a NUL (PostgreSQL cannot
      // take one) or half of a surrogate pair (U+FFFD to SQL) in its key or id is no cursor
      // any listing handed out.
      const forged = (key: string, id: string) => encodeKeysetCursor('oldest', key, id, {});
      for (const after of [
        forged(at(1), 'a\u0000'),
        forged(`${at(1)}\u0000`, 'a'),
        forged(at(1), '\ud800'),
      ]) {
        await expect(store.pageRequests({ limit: 2, after }), after).rejects.toMatchObject({
          code: 'INVALID_CURSOR',
        });
      }
      expect((await store.pageRequests({ limit: 2, after: forged(at(1), 'a') })).items[0]?.id).toBe('b');
      for (const limit of [0, -1, 1.5, 1001]) {
        await expect(store.pageRequests({ limit })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      }
      await expect(
        store.pageRequests({ limit: 2, sort: 'expiring', status: 'approved' }),
      ).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
      await expect(
        store.pageRequests({ limit: 2, sort: 'decided', status: 'pending' }),
      ).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
    });
  });
}
