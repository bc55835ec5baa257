import { expect } from 'vitest';
import type { CheckpointStore, RunPageQuery, RunStatus } from '../checkpoint-store.ts';
import { encodeCursor, planPage } from '../request-page.ts';
import { checkpoint } from './checkpoint-store-conformance.ts';
import { at, portRequest, request } from './fixtures.ts';
import { describe, it } from './harness.ts';

/** Every page of `query`, following `next` until it is null. */
export async function walk(store: CheckpointStore, query: RunPageQuery): Promise<string[][]> {
  const pages: string[][] = [];
  let after: string | undefined;
  for (let guard = 0; guard < 200; guard++) {
    const page = await store.pageRuns({ ...query, ...(after === undefined ? {} : { after }) });
    pages.push(page.items.map((item) => item.run));
    if (page.next === null) return pages;
    after = page.next;
  }
  throw new Error('paging did not end');
}

export async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}

export interface RunFields {
  customer?: string | null;
  workflow?: string;
  status?: RunStatus;
}

/** A run of one checkpoint at `second`, for `customer`, in `status`. */
export async function startRun(store: CheckpointStore, run: string, second: number, fields: RunFields = {}) {
  const saved = await store.saveCheckpoint(
    checkpoint(run, 0, {
      createdAt: at(second),
      customer: fields.customer ?? null,
      workflow: fields.workflow ?? 'refund',
      status: fields.status ?? 'running',
    }),
    null,
  );
  if (!saved.saved) throw new Error(`test setup could not save ${run}`);
}

/** Pages of runs (CheckpointStore.pageRuns), and the customer a run records: every backend alike. */
export function runPageCases(store: () => CheckpointStore): void {
  const started = (run: string, second: number, fields: RunFields = {}) =>
    startRun(store(), run, second, fields);

  // Six runs; r-c and r-d start at the same instant (the run id breaks the tie).
  async function seeded() {
    await started('r-a', 1, { customer: 'c-100' });
    await started('r-b', 2, { customer: 'c-200', workflow: 'exchange' });
    await started('r-c', 3, { customer: 'c-100', status: 'awaiting_input' });
    await started('r-d', 3, { status: 'completed' });
    await started('r-e', 4, { customer: 'c-100', workflow: 'exchange', status: 'awaiting_input' });
    await started('r-f', 5, { customer: 'C-100' });
  }

  describe('pages of runs', () => {
    it('pages newest first by default, oldest first when asked, ties by run id, and says when it ends', async () => {
      await seeded();
      expect(await walk(store(), { limit: 2 })).toEqual([
        ['r-f', 'r-e'],
        ['r-d', 'r-c'],
        ['r-b', 'r-a'],
      ]);
      expect(await walk(store(), { limit: 4, sort: 'oldest' })).toEqual([
        ['r-a', 'r-b', 'r-c', 'r-d'],
        ['r-e', 'r-f'],
      ]);
      const whole = await store().pageRuns({ limit: 6 });
      expect(whole.next).toBeNull();
      expect(whole.items[1]).toEqual({
        run: 'r-e',
        workflow: 'exchange',
        version: 1,
        status: 'awaiting_input',
        checkpoint: 'cp-r-e-0',
        customer: 'c-100',
        createdAt: at(4),
        updatedAt: at(4),
      });
      expect(
        await store().pageRuns({ limit: 1, sort: 'oldest', after: whole.next ?? undefined }),
      ).toMatchObject({ items: [{ run: 'r-a' }] });
    });

    it('filters exactly by status, workflow and customer, alone and together', async () => {
      await seeded();
      const runs = async (query: Omit<RunPageQuery, 'limit'>) =>
        (await walk(store(), { limit: 2, ...query })).flat();
      expect(await runs({ customer: 'c-100' })).toEqual(['r-e', 'r-c', 'r-a']);
      // Exact: another case is another customer, a part of an id is none.
      expect(await runs({ customer: 'C-100' })).toEqual(['r-f']);
      expect(await runs({ customer: 'c-10' })).toEqual([]);
      expect(await runs({ status: 'awaiting_input' })).toEqual(['r-e', 'r-c']);
      expect(await runs({ workflow: 'exchange' })).toEqual(['r-e', 'r-b']);
      expect(await runs({ workflow: 'exchange', customer: 'c-100' })).toEqual(['r-e']);
      expect(await runs({ status: 'awaiting_input', customer: 'c-100', sort: 'oldest' })).toEqual([
        'r-c',
        'r-e',
      ]);
      expect(await runs({ status: 'completed', workflow: 'refund' })).toEqual(['r-d']);
      expect(await runs({ status: 'failed' })).toEqual([]);
      // Blank filters are no filters.
      expect(await runs({ customer: ' ', workflow: '' })).toHaveLength(6);
    });

    it('lists a run by the status of its latest checkpoint, so a filter follows it as it moves', async () => {
      await seeded();
      const moved = await store().saveCheckpoint(
        checkpoint('r-c', 1, { createdAt: at(9), status: 'completed' }),
        'cp-r-c-0',
      );
      expect(moved.saved).toBe(true);
      expect((await walk(store(), { limit: 5, status: 'awaiting_input' })).flat()).toEqual(['r-e']);
      expect((await walk(store(), { limit: 5, status: 'completed' })).flat()).toEqual(['r-d', 'r-c']);
      expect(
        (await store().pageRuns({ limit: 1, customer: 'c-100', sort: 'oldest', after: undefined })).items,
      ).toEqual([expect.objectContaining({ run: 'r-a' })]);
      const [c] = (await store().pageRuns({ limit: 1, status: 'completed', sort: 'oldest' })).items;
      // Still listed by when it started, updated at its latest checkpoint.
      expect(c).toMatchObject({ run: 'r-c', createdAt: at(3), updatedAt: at(9), checkpoint: 'cp-r-c-1' });
    });

    it('counts the matches when asked, exactly below the cap', async () => {
      await seeded();
      expect((await store().pageRuns({ limit: 2 })).total).toBeUndefined();
      expect((await store().pageRuns({ limit: 2, count: true })).total).toEqual({ count: 6, exact: true });
      const theirs = await store().pageRuns({ limit: 1, count: true, customer: 'c-100' });
      expect(theirs.total).toEqual({ count: 3, exact: true });
      // The count is of every match, not of what follows the cursor.
      const second = await store().pageRuns({
        limit: 1,
        count: true,
        customer: 'c-100',
        after: theirs.next ?? '',
      });
      expect(second.total).toEqual({ count: 3, exact: true });
    });

    it('binds a cursor to its filters: the same filters page on (any page size), other filters are INVALID_CURSOR', async () => {
      await seeded();
      const runs = (page: { items: Array<{ run: string }> }) => page.items.map((item) => item.run);
      const first = await store().pageRuns({ limit: 1, customer: 'c-100' });
      expect(runs(first)).toEqual(['r-e']);
      const after = first.next ?? '';
      expect(after).not.toBe('');
      // The same filters: the next page whatever the page size or the count; a customer is
      // trimmed as the list trims it.
      expect(runs(await store().pageRuns({ limit: 1, customer: 'c-100', after }))).toEqual(['r-c']);
      expect(runs(await store().pageRuns({ limit: 5, customer: ' c-100 ', count: true, after }))).toEqual([
        'r-c',
        'r-a',
      ]);
      // Other filters: one dropped, changed or added, or the same value under another name.
      const others: Array<Omit<RunPageQuery, 'limit'>> = [
        {},
        { customer: 'C-100' },
        { customer: 'c-200' },
        { customer: 'c-100', status: 'awaiting_input' },
        { customer: 'c-100', workflow: 'refund' },
        { workflow: 'c-100' },
      ];
      for (const other of others)
        await expect(
          store().pageRuns({ limit: 2, ...other, after }),
          JSON.stringify(other),
        ).rejects.toMatchObject({
          code: 'INVALID_CURSOR',
          message: expect.stringMatching(/other filters.*start again from the first page without a cursor/i),
        });
      // A cursor of the format before filters were bound is refused, saying why.
      const unbound = Buffer.from(JSON.stringify([1, 'runs.newest', at(4), 'r-e'])).toString('base64url');
      await expect(store().pageRuns({ limit: 2, after: unbound })).rejects.toMatchObject({
        code: 'INVALID_CURSOR',
        message: expect.stringMatching(/earlier version.*start again from the first page/i),
      });
    });

    it('refuses a cursor it did not hand out, one of the other sort or of a request list (INVALID_CURSOR), and a bad query (INVALID_INPUT)', async () => {
      await seeded();
      const newest = await store().pageRuns({ limit: 2 });
      expect(await codeOf(store().pageRuns({ limit: 2, after: 'not a cursor' }))).toBe('INVALID_CURSOR');
      expect(await codeOf(store().pageRuns({ limit: 2, after: `${newest.next}x` }))).toBe('INVALID_CURSOR');
      expect(await codeOf(store().pageRuns({ limit: 2, sort: 'oldest', after: newest.next ?? '' }))).toBe(
        'INVALID_CURSOR',
      );
      const requestCursor = encodeCursor(
        request({ id: 'x', session: 's1' }),
        planPage({ limit: 2, sort: 'newest' }),
      );
      expect(await codeOf(store().pageRuns({ limit: 2, after: requestCursor }))).toBe('INVALID_CURSOR');
      expect(await codeOf(store().pageRuns({ limit: 0 }))).toBe('INVALID_INPUT');
      expect(await codeOf(store().pageRuns({ limit: 1001 }))).toBe('INVALID_INPUT');
      expect(await codeOf(store().pageRuns({ limit: 2, status: 'done' as RunStatus }))).toBe('INVALID_INPUT');
      expect(await codeOf(store().pageRuns({ limit: 2, sort: 'updated' as 'newest' }))).toBe('INVALID_INPUT');
    });
  });

  describe("a run's customer", () => {
    it('is recorded with the first checkpoint; a later one naming another changes nothing', async () => {
      await started('r', 1, { customer: 'c-100' });
      const later = await store().saveCheckpoint(
        checkpoint('r', 1, { createdAt: at(2), customer: 'c-666' }),
        'cp-r-0',
      );
      expect(later.saved).toBe(true);
      expect((await store().listRuns())[0]).toMatchObject({ run: 'r', customer: 'c-100' });
      expect((await walk(store(), { limit: 5, customer: 'c-666' })).flat()).toEqual([]);
    });

    it('is null for a run started for no one, and listRuns says so too', async () => {
      await started('r', 1);
      expect(await store().listRuns()).toEqual([expect.objectContaining({ run: 'r', customer: null })]);
      expect((await store().pageRuns({ limit: 5 })).items[0]?.customer).toBeNull();
    });

    it('erases a run started for the customer that raised no request naming them, and nobody else’s', async () => {
      await started('r-theirs', 1, { customer: 'c-100', status: 'awaiting_input' });
      // Another customer's run, waiting on a request: untouched.
      const other = await store().saveCheckpoint(
        checkpoint('r-other', 0, { createdAt: at(2), customer: 'c-200', status: 'awaiting_input' }),
        null,
        { requests: [portRequest('r-other', 'req_other', { customer: 'c-200' })] },
      );
      expect(other.saved).toBe(true);
      const counts = await store().erasePrincipal({ principal: 'c-100', at: at(50) });
      expect(counts).toMatchObject({ runs: 1, checkpoints: 1, requests: 0 });
      expect(await store().latestCheckpoint('r-theirs')).toBeNull();
      expect((await store().pageRuns({ limit: 5 })).items.map((run) => run.run)).toEqual(['r-other']);
      expect((await store().pageRuns({ limit: 5, customer: 'c-100' })).items).toEqual([]);
      expect(await store().getApproval('req_other')).not.toBeNull();
      expect(await store().erasePrincipal({ principal: 'c-100', at: at(51) })).toMatchObject({ runs: 0 });
    });

    it('purges a run that ended before the cutoff, not one that ended and went on again, nor one that ended after', async () => {
      await started('r-old', 1, { status: 'completed' });
      await started('r-late', 2, { status: 'completed' });
      await started('r-resumed', 3, { status: 'running' });
      // r-resumed ends, then a later checkpoint (a resume from an earlier one) makes it run again.
      for (const [seq, status, second] of [
        [1, 'completed', 4],
        [2, 'running', 5],
      ] as const) {
        const saved = await store().saveCheckpoint(
          checkpoint('r-resumed', seq, { createdAt: at(second), status }),
          `cp-r-resumed-${seq - 1}`,
        );
        expect(saved.saved).toBe(true);
      }
      const purge = (dryRun: boolean) =>
        store().purgeBatch({ before: { runs: at(2) }, limit: 10, at: at(99), nowMs: 0, dryRun });
      expect(await purge(true)).toMatchObject({ runs: 1 });
      expect(await purge(false)).toMatchObject({ runs: 1 });
      expect((await store().listRuns()).map((run) => run.run)).toEqual(['r-late', 'r-resumed']);
      const later = await store().purgeBatch({ before: { runs: at(90) }, limit: 10, at: at(99), nowMs: 0 });
      expect(later).toMatchObject({ runs: 1 });
      expect((await store().listRuns()).map((run) => run.run)).toEqual(['r-resumed']);
    });
  });
}
