import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installPgCounter, pgCounts, resetPgCounts } from '../../../bench/pg-round-trips.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL } from '../../../test/helpers/postgres.ts';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import { leasedSession, raise, request } from '../conformance/fixtures.ts';
import { coalescedReads } from './coalesced-reads.ts';
import { createPostgresStore, type PostgresStore } from './postgres-store.ts';

const url = await postgresForTests();
installPgCounter();

/** A lookup over `rows` that records the keys of each call. */
function recorded(rows: Map<string, string>) {
  const calls: string[][] = [];
  let fail: Error | undefined;
  const read = coalescedReads(
    async (keys: readonly string[]) => {
      calls.push([...keys]);
      if (fail) throw fail;
      return new Map([...rows].filter(([key]) => keys.includes(key)));
    },
    (key) => key,
  );
  return {
    read,
    calls,
    failNext(error: Error) {
      fail = error;
    },
  };
}

describe('coalescedReads', () => {
  it('reads started in one turn go out as one lookup, and each caller gets its own row', async () => {
    const { read, calls } = recorded(
      new Map([
        ['a', 'A'],
        ['b', 'B'],
        ['c', 'C'],
      ]),
    );
    const results = await Promise.all([read('a'), read('c'), read('missing'), read('b')]);
    expect(results).toEqual(['A', 'C', undefined, 'B']);
    expect(calls).toEqual([['a', 'c', 'missing', 'b']]);
  });

  it('the same key twice in one turn: both callers answered', async () => {
    const { read } = recorded(new Map([['a', 'A']]));
    expect(await Promise.all([read('a'), read('a')])).toEqual(['A', 'A']);
  });

  it('nothing is cached: a read after a change sees the change', async () => {
    const rows = new Map([['a', 'old']]);
    const { read, calls } = recorded(rows);
    expect(await read('a')).toBe('old');
    rows.set('a', 'new');
    expect(await read('a')).toBe('new');
    expect(calls).toHaveLength(2);
  });

  it('reads of different turns are separate lookups', async () => {
    const { read, calls } = recorded(
      new Map([
        ['a', 'A'],
        ['b', 'B'],
      ]),
    );
    expect(await read('a')).toBe('A');
    expect(await read('b')).toBe('B');
    expect(calls).toEqual([['a'], ['b']]);
  });

  it('a failed lookup fails each caller of that turn with its error, and the next turn reads again', async () => {
    const lookup = recorded(new Map([['a', 'A']]));
    const down = new StoreUnavailableError('The store is down.');
    lookup.failNext(down);
    const settled = await Promise.allSettled([lookup.read('a'), lookup.read('b')]);
    expect(settled).toEqual([
      { status: 'rejected', reason: down },
      { status: 'rejected', reason: down },
    ]);
    lookup.failNext(undefined as never);
    expect(await lookup.read('a')).toBe('A');
  });

  it("one key's error reaches only its caller: the turn's keys are read again one by one", async () => {
    const calls: string[][] = [];
    const edited = new Error('A stored value names data key dk_x, which this store does not hold.');
    const read = coalescedReads(
      async (keys: readonly string[]) => {
        calls.push([...keys]);
        if (keys.includes('edited')) throw edited;
        return new Map(keys.map((key) => [key, key.toUpperCase()]));
      },
      (key) => key,
    );
    const settled = await Promise.allSettled([read('a'), read('edited'), read('b')]);
    expect(settled).toEqual([
      { status: 'fulfilled', value: 'A' },
      { status: 'rejected', reason: edited },
      { status: 'fulfilled', value: 'B' },
    ]);
    expect(calls).toEqual([['a', 'edited', 'b'], ['a'], ['edited'], ['b']]);
  });

  it('a statement reads at most 64 keys: more in one turn are split', async () => {
    const keys = Array.from({ length: 100 }, (_, i) => `k${i}`);
    const { read, calls } = recorded(new Map(keys.map((key) => [key, key.toUpperCase()])));
    expect(await Promise.all(keys.map(read))).toEqual(keys.map((key) => key.toUpperCase()));
    expect(calls.map((call) => call.length)).toEqual([64, 36]);
  });
});

/**
 * What each caller reads is pinned for every backend by the conformance suite (approval and
 * state cases); here, that concurrent reads cost PostgreSQL one statement.
 */
describe.skipIf(url === null)('PostgreSQL point reads coalesced per turn', () => {
  const schema = freshSchema('coalread');
  let store: PostgresStore;
  beforeAll(async () => {
    store = await createPostgresStore({ connectionString: url ?? TEST_PG_URL, schema });
  });
  afterAll(async () => {
    await store?.close();
    await dropSchema(schema);
  });

  it('requests with their sessions read in one turn: one statement', async () => {
    for (const [i, id] of ['r1', 'r2', 'r3'].entries()) {
      await leasedSession(store, `s${i}`);
      await raise(store, `s${i}`, [request({ id, session: `s${i}` })]);
    }
    resetPgCounts();
    const found = await Promise.all(
      ['r1', 'r2', 'r3', 'missing'].map((id) => store.getApprovalWithSession!(id)),
    );
    expect(found.map((f) => f?.request.id ?? null)).toEqual(['r1', 'r2', 'r3', null]);
    expect(pgCounts().statements).toBe(1);
  });

  it('app state read in one turn: one statement', async () => {
    await store.setState('ns', 'a', 1);
    await store.setState('ns', 'b', 2);
    resetPgCounts();
    expect(
      await Promise.all([store.getState('ns', 'a'), store.getState('ns', 'b'), store.getState('ns', 'c')]),
    ).toEqual([1, 2, undefined]);
    expect(pgCounts().statements).toBe(1);
  });
});
