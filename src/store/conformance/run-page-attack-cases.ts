import { expect } from 'vitest';
import type { CheckpointStore, RunPageQuery, RunSort } from '../checkpoint-store.ts';
import { encodeKeysetCursor } from '../keyset-cursor.ts';
import { checkpoint } from './checkpoint-store-conformance.ts';
import { at } from './fixtures.ts';
import { describe, it } from './harness.ts';
import { codeOf, type RunFields, startRun, walk } from './run-page-cases.ts';

/** Attacks on pages of runs: ties, writes between pages, forged cursors, odd customer ids. */
export function runPageAttackCases(store: () => CheckpointStore): void {
  const start = (run: string, second: number, fields: RunFields = {}) =>
    startRun(store(), run, second, fields);

  describe('pages of runs under attack', () => {
    it('breaks ties of one instant by run id: every sort, filter and page size reads each run once', async () => {
      // 13 runs at one instant, 4 at the next; ids chosen so their byte order is not their
      // insertion order (upper case before lower, digits before letters).
      const ids = ['m', 'B', 'a', 'z9', 'z10', 'Z', '0', 'a-b', 'a_b', 'a.b', 'q', 'Q', 'mm'];
      for (const [index, id] of ids.entries())
        await start(`r-${id}`, 7, { customer: index % 2 === 0 ? 'c-1' : 'c-2', status: 'running' });
      for (const id of ['x', 'y', 'w', 'v']) await start(`r-${id}`, 8, { customer: 'c-1' });
      const all = (await store().listRuns()).map((run) => ({ ...run }));
      expect(all).toHaveLength(17);
      const filters: Array<Omit<RunPageQuery, 'limit'>> = [
        {},
        { customer: 'c-1' },
        { customer: 'c-2' },
        { status: 'running' },
        { workflow: 'refund' },
        { customer: 'c-1', status: 'running', workflow: 'refund' },
      ];
      for (const sort of ['newest', 'oldest'] as RunSort[]) {
        for (const filter of filters) {
          const expected = all
            .filter((run) => filter.customer === undefined || run.customer === filter.customer)
            .sort((a, b) => {
              const order =
                a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.run < b.run ? -1 : 1;
              return sort === 'newest' ? -order : order;
            })
            .map((run) => run.run);
          for (const limit of [1, 2, 3, 5, 16, 17, 18]) {
            const pages = await walk(store(), { ...filter, sort, limit });
            expect({ sort, filter, limit, runs: pages.flat() }).toEqual({
              sort,
              filter,
              limit,
              runs: expected,
            });
            // Only the last page may be short; none is empty unless the listing is.
            for (const page of pages.slice(0, -1)) expect(page).toHaveLength(limit);
          }
        }
      }
    });

    it('neither skips nor repeats a run when runs start, move or end between pages', async () => {
      for (let second = 1; second <= 6; second++) await start(`r-${second}`, second, { status: 'running' });
      const first = await store().pageRuns({ limit: 2, status: 'running' });
      expect(first.items.map((run) => run.run)).toEqual(['r-6', 'r-5']);
      // A newer run starts (before the cursor in this order: not on later pages), r-3 ends.
      await start('r-7', 7);
      const ended = await store().saveCheckpoint(
        checkpoint('r-3', 1, { createdAt: at(8), status: 'completed' }),
        'cp-r-3-0',
      );
      expect(ended.saved).toBe(true);
      const rest = await walk(store(), { limit: 2, status: 'running', after: first.next ?? '' });
      expect(rest.flat()).toEqual(['r-4', 'r-2', 'r-1']);
      // Oldest first, a run started after the walk began comes at its end, once.
      const oldest = await store().pageRuns({ limit: 3, sort: 'oldest' });
      await start('r-8', 9);
      const after = await walk(store(), { limit: 3, sort: 'oldest', after: oldest.next ?? '' });
      expect([...oldest.items.map((run) => run.run), ...after.flat()]).toEqual([
        'r-1',
        'r-2',
        'r-3',
        'r-4',
        'r-5',
        'r-6',
        'r-7',
        'r-8',
      ]);
    });

    it('refuses forged cursors with INVALID_CURSOR (or reads them as a position), never a store error', async () => {
      await start('r-1', 1);
      await start('r-2', 2);
      const forged = (key: string, id: string, order = 'runs.newest') =>
        store().pageRuns({ limit: 5, after: encodeKeysetCursor(order, key, id, {}) });
      // A well-formed cursor is a position: any key and id order among the stored ones.
      expect((await forged('zzz', '')).items.map((run) => run.run)).toEqual(['r-2', 'r-1']);
      expect((await forged('', '')).items).toEqual([]);
      expect((await forged(at(2), 'r-2')).items.map((run) => run.run)).toEqual(['r-1']);
      // Text no store can compare (NUL) is no position any listing handed out.
      expect(await codeOf(forged('a\u0000b', 'r'))).toBe('INVALID_CURSOR');
      expect(await codeOf(forged(at(2), 'r\u0000'))).toBe('INVALID_CURSOR');
      const malformed = [
        Buffer.from('[1,"runs.newest","x"]').toString('base64url'),
        Buffer.from('[1,"runs.newest",1,"x"]').toString('base64url'),
        Buffer.from('[2,"runs.newest","x","y"]').toString('base64url'),
        Buffer.from('[2,"runs.newest","x","y",7]').toString('base64url'),
        Buffer.from('[3,"runs.newest","x","y","z"]').toString('base64url'),
        // Of the format before filters were bound (refused: its filters are not known).
        Buffer.from('[1,"runs.newest","x","y"]').toString('base64url'),
        // Bound to filters this page has not got.
        encodeKeysetCursor('runs.newest', 'x', 'y', { status: 'running' }),
        Buffer.from('{"order":"runs.newest"}').toString('base64url'),
        Buffer.from('[1,"runs.newest","x","y"').toString('base64url'),
        encodeKeysetCursor('runs.updated', 'x', 'y', {}),
        encodeKeysetCursor('newest', 'x', 'y', {}),
        '=',
        '%%%',
        'W',
        ' ',
      ];
      for (const after of malformed)
        expect({ after, code: await codeOf(store().pageRuns({ limit: 5, after })) }).toEqual({
          after,
          code: 'INVALID_CURSOR',
        });
      for (const limit of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 10 ** 9, 1001])
        expect({ limit, code: await codeOf(store().pageRuns({ limit })) }).toEqual({
          limit,
          code: 'INVALID_INPUT',
        });
    });

    it('matches odd customer ids exactly: unicode, separators, dots, percent signs, long ones', async () => {
      const odd = [
        'ünïcødé-客户',
        'a/b',
        '..',
        '../c-1',
        '.',
        '%',
        '%25',
        'a%2Fb',
        'c 1',
        'x'.repeat(600),
        `${'x'.repeat(599)}y`,
      ];
      for (const [index, customer] of odd.entries()) await start(`r-${index}`, index + 1, { customer });
      await start('r-plain', 50, { customer: 'c-1' });
      for (const [index, customer] of odd.entries()) {
        const page = await store().pageRuns({ limit: 10, customer, count: true });
        expect({ customer, runs: page.items.map((run) => run.run), total: page.total?.count }).toEqual({
          customer,
          runs: [`r-${index}`],
          total: 1,
        });
        expect(page.items[0]?.customer).toBe(customer);
      }
      expect((await store().pageRuns({ limit: 10, customer: 'c-1' })).items.map((run) => run.run)).toEqual([
        'r-plain',
      ]);
      expect((await store().pageRuns({ limit: 10, customer: 'a' })).items).toEqual([]);
      // Text no store can hold (NUL) is refused alike everywhere.
      expect(await codeOf(store().pageRuns({ limit: 10, customer: 'c\u00001' }))).toBe('INVALID_INPUT');
    });
  });
}
