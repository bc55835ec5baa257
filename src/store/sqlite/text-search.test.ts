import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEncryption } from '../../crypto/encryption.ts';
import { envKeyProvider } from '../../crypto/env-key-provider.ts';
import { at, byPerson, leasedSession, raise, request } from '../conformance/fixtures.ts';
import { createMemoryStore } from '../memory/memory-store.ts';
import { planPage } from '../request-page.ts';
import type { RequestPageQuery, RequestSort, Store } from '../store.ts';
import { migrations } from './migrations.ts';
import { createSqliteStore, type SqliteStore } from './sqlite-store.ts';
import {
  MATCH_COUNT_SQL,
  MAX_PROBES,
  NARROWING_CAP,
  narrowing,
  trigramMatch,
  trigramsOf,
} from './text-search.ts';

describe('trigrams and the choice to narrow', () => {
  it('cuts a needle into its distinct trigrams by character, at most MAX_PROBES spread over it', () => {
    expect(trigramsOf('abcd')).toEqual(['abc', 'bcd']);
    expect(trigramsOf('ab')).toEqual([]);
    expect(trigramsOf('aaaaa')).toEqual(['aaa']);
    // Code points, as FTS5 cuts UTF-8: the emoji is one character, two UTF-16 units.
    expect(trigramsOf('😀ab')).toEqual(['😀ab']);
    const long = 'the quick brown fox jumps over the lazy dog';
    const some = trigramsOf(long);
    expect(some).toHaveLength(MAX_PROBES);
    expect(some[0]).toBe('the');
    expect(some.at(-1)).toBe('dog');
    for (const trigram of some) expect(long).toContain(trigram);
  });

  it('asks FTS5 for a trigram as a quoted phrase, in the customer column or in any', () => {
    expect(trigramMatch('a"b', null)).toBe('"a""b"');
    expect(trigramMatch('c-7', 'customer')).toBe('customer : "c-7"');
    expect(trigramMatch('(*:', null)).toBe('"(*:"');
  });

  it("narrows by the first rare trigram from the needle's end, and walks when there is none", () => {
    const plan = (query: Omit<RequestPageQuery, 'limit'>) => planPage({ limit: 50, ...query });
    const asked: string[] = [];
    const counts =
      (rows: Record<string, number>, otherwise = NARROWING_CAP + 1) =>
      (match: string, cap: number) => {
        expect(cap).toBe(NARROWING_CAP + 1);
        asked.push(match);
        return Math.min(rows[match] ?? otherwise, cap);
      };
    // Nothing to narrow: no partial filter the index holds, or too short a needle.
    expect(narrowing(plan({ status: 'pending', tool: 'refund' }), counts({}))).toBeUndefined();
    expect(narrowing(plan({ text: 'c7' }), counts({}))).toBeUndefined();
    // A NUL would end the FTS5 query early; no plan holds one.
    expect(() => plan({ text: 'x\u0000yz' })).toThrow(/NUL/);
    expect(asked).toEqual([]);
    // Every trigram common: walk.
    expect(narrowing(plan({ text: 'customer' }), counts({}))).toBeUndefined();
    expect(asked).toEqual(['"mer"', '"ome"', '"tom"', '"sto"', '"ust"', '"cus"']);
    // The first rare one from the end, counted no further; a trigram no row holds is rare too.
    asked.length = 0;
    expect(narrowing(plan({ text: 'Customer C-7.' }), counts({ '"c-7"': NARROWING_CAP, '"-7."': 0 }))).toBe(
      '"-7."',
    );
    expect(asked).toEqual(['"-7."']);
    asked.length = 0;
    expect(narrowing(plan({ text: 'customer c-7.' }), counts({ '"c-7"': NARROWING_CAP }))).toBe('"c-7"');
    expect(asked).toEqual(['"-7."', '"c-7"']);
    // The customer filter when the text has none (eight of the eleven trigrams of
    // "customer c-7." are counted, spread over it).
    asked.length = 0;
    expect(
      narrowing(plan({ text: 'customer c-7.', customer: 'Dave' }), counts({ 'customer : "ave"': 3 })),
    ).toBe('customer : "ave"');
    expect(asked).toEqual([
      '"-7."',
      '"c-7"',
      '"r c"',
      '"er "',
      '"ome"',
      '"tom"',
      '"ust"',
      '"cus"',
      'customer : "ave"',
    ]);
  });
});

describe('SQLite text search', () => {
  let dir: string;
  const opened: SqliteStore[] = [];
  const open = (options: Partial<Parameters<typeof createSqliteStore>[0]> = {}) => {
    const store = createSqliteStore({ path: join(dir, 'store.db'), ...options });
    opened.push(store);
    return store;
  };
  const raw = <T>(work: (db: DatabaseSync) => T): T => {
    const db = new DatabaseSync(join(dir, 'store.db'));
    try {
      return work(db);
    } finally {
      db.close();
    }
  };
  const matches = (match: string) =>
    raw((db) => (db.prepare(MATCH_COUNT_SQL).get(match, 1_000_000) as { n: number }).n);

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'countersign-search-'));
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Every page of `query`, followed by its cursor. */
  async function walk(store: Store, query: RequestPageQuery): Promise<string[]> {
    const ids: string[] = [];
    let after: string | undefined;
    for (let guard = 0; guard < 1000; guard++) {
      const page = await store.pageRequests({ ...query, ...(after === undefined ? {} : { after }) });
      ids.push(...page.items.map((item) => item.id));
      if (page.next === null) return ids;
      after = page.next;
    }
    throw new Error('paging did not end');
  }

  it('finds what a walk finds, in its order, over random previews, customers, needles, sorts and cursors', async () => {
    // A small alphabet so trigrams repeat; LIKE's wildcards and escape, quotes, non-ASCII
    // letters whose case LIKE does not fold (FTS5 does: its candidates are more, never fewer).
    const letter = fc.constantFrom(
      'a',
      'a',
      'b',
      'b',
      'A',
      'B',
      ' ',
      '%',
      '_',
      '\\',
      '"',
      'é',
      'É',
      'ß',
      // Folded by FTS5 but not by LIKE: dotted and dotless i, the Kelvin sign, final sigma.
      'İ',
      'ı',
      '\u212a',
      'ς',
      'Σ',
      '😀',
      '.',
      '1',
    );
    const text = (maxLength: number) => fc.array(letter, { maxLength }).map((letters) => letters.join(''));
    const row = fc.record({
      effect: text(16),
      customer: fc.option(text(8), { nil: null }),
      second: fc.integer({ min: 0, max: 4 }),
      decided: fc.boolean(),
    });
    const flipCase = (value: string, mask: number) =>
      [...value].map((c, i) => ((mask >> i) & 1 ? c.toUpperCase() : c.toLowerCase())).join('');
    const sqlite = open();
    const memory = createMemoryStore();
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(row, { minLength: 1, maxLength: 12 }),
        fc.record({
          // The needle: a piece of one stored text (in another case), the head of one piece and
          // the tail of another (trigrams of both, maybe nowhere together), or any text.
          kind: fc.constantFrom('piece', 'piece', 'splice', 'random'),
          from: fc.nat(),
          other: fc.nat(),
          start: fc.nat(),
          length: fc.integer({ min: 1, max: 8 }),
          mask: fc.nat(),
          random: text(6),
          field: fc.constantFrom('text', 'customer', 'both'),
          sort: fc.constantFrom<RequestSort>('oldest', 'newest', 'expiring', 'decided'),
          pendingOnly: fc.boolean(),
          limit: fc.integer({ min: 1, max: 4 }),
        }),
        async (rows, ask) => {
          round += 1;
          const session = `s${round}`;
          const requests = rows.map((r, i) =>
            request({
              id: `r${round}-${i}`,
              session,
              createdAt: at(r.second),
              expiresAt: at(100 + r.second),
              effect: r.effect,
              customer: r.customer,
            }),
          );
          for (const store of [sqlite, memory]) {
            await leasedSession(store, session);
            await raise(store, session, requests);
            for (const [i, r] of rows.entries()) {
              if (r.decided) await store.decide(`r${round}-${i}`, byPerson('approved', 10 + i));
            }
          }
          const stored = (index: number) => {
            const source = rows[index % rows.length];
            return (index % 2 === 0 ? source?.effect : source?.customer) ?? '';
          };
          // By code point: half an emoji is no needle (planPage refuses it).
          const piece = (index: number) => {
            const value = [...stored(index)];
            return value.slice(ask.start % Math.max(value.length, 1)).slice(0, ask.length + 2);
          };
          const needle =
            ask.kind === 'random'
              ? ask.random
              : ask.kind === 'piece'
                ? flipCase(piece(ask.from).join(''), ask.mask)
                : flipCase(
                    [...piece(ask.from).slice(0, 3), ...piece(ask.other).slice(-3)].join(''),
                    ask.mask,
                  );
          if (needle.trim() === '') return;
          const query: RequestPageQuery = {
            limit: ask.limit,
            sort: ask.sort,
            ...(ask.field === 'customer' ? {} : { text: needle }),
            ...(ask.field === 'text' ? {} : { customer: needle }),
            ...(ask.pendingOnly && ask.sort !== 'decided' ? { status: 'pending' as const } : {}),
          };
          expect(await walk(sqlite, query), JSON.stringify(query)).toEqual(await walk(memory, query));
          const counted = { ...query, count: true };
          expect((await sqlite.pageRequests(counted)).total).toEqual(
            (await memory.pageRequests(counted)).total,
          );
          // And the index is what its view says: the triggers kept it, nothing more or less.
          if (round % 25 === 0)
            raw((db) =>
              db.exec(`INSERT INTO approvals_search (approvals_search) VALUES ('integrity-check')`),
            );
        },
      ),
      { numRuns: 150 },
    );
  }, 120_000);

  it('narrows a rare needle and walks a common or short one, with the same answers', async () => {
    const store = open();
    // 1,500 waiting requests as the bench writes them; "customer c-" is in every one.
    raw((db) => {
      db.exec('BEGIN');
      const insert = db.prepare(
        `INSERT INTO approvals (id, session, agent, call_id, tool, args_json, args_hash, effect, created_at,
           expires_at, status, customer) VALUES (?, ?, 'bookstore', ?, 'refund', '{}', ?, ?, ?, ?, 'pending', ?)`,
      );
      for (let i = 0; i < 1500; i++) {
        insert.run(
          `apr-${String(i).padStart(7, '0')}`,
          `s-${i}`,
          `call-${i}`,
          '0'.repeat(64),
          `Cancel order ${i} for customer c-${i % 500}.`,
          at(i),
          at(100_000),
          `c-${i % 500}`,
        );
      }
      db.exec('COMMIT');
    });
    const count = (match: string, cap: number) => Math.min(matches(match), cap);
    const plan = (text: string) => planPage({ status: 'pending', limit: 50, text });
    // "-7." is in 3 rows of 1,500: no other trigram is counted.
    expect(narrowing(plan('customer c-7.'), count)).toBe('"-7."');
    expect(narrowing(plan('customer c-'), count)).toBeUndefined();
    expect(narrowing(plan('c-'), count)).toBeUndefined();
    expect(narrowing(planPage({ limit: 50, customer: 'C-499' }), count)).toBe('customer : "499"');
    const ids = (query: Omit<RequestPageQuery, 'limit'>) => walk(store, { limit: 2, ...query });
    expect(await ids({ status: 'pending', text: 'customer C-7.' })).toEqual([
      'apr-0000007',
      'apr-0000507',
      'apr-0001007',
    ]);
    expect(await ids({ sort: 'newest', customer: 'c-499' })).toEqual([
      'apr-0001499',
      'apr-0000999',
      'apr-0000499',
    ]);
    expect((await walk(store, { limit: 1000, text: 'customer c-' })).length).toBe(1500);
    expect((await store.pageRequests({ limit: 1, text: 'customer c-', count: true })).total).toEqual({
      count: 1000,
      exact: false,
    });
    expect((await walk(store, { limit: 1000, text: 'r 1' })).length).toBe(
      Array.from({ length: 1500 }, (_, i) => `Cancel order ${i}`).filter((e) => e.includes('r 1')).length,
    );
  });

  it('keeps the index with the rows: raised, edited and erased requests, and sealed previews left out', async () => {
    const keys = `k1:${Buffer.alloc(32, 7).toString('base64')}`;
    const encryption = createEncryption(envKeyProvider(keys));
    const store = encryption.wrap(open({ codec: encryption.codec }));
    await leasedSession(store, 's1');
    await raise(store, 's1', [
      request({
        id: 'a',
        session: 's1',
        effect: 'Refunds 12.00 on order 1040.',
        customer: 'Zebulon Quixote',
      }),
      request({ id: 'b', session: 's1', createdAt: at(11), effect: 'Refunds 7.00.', customer: 'dave' }),
    ]);
    // The previews are sealed: neither their words nor their ciphertext are in the index.
    expect(matches('effect : "ref"')).toBe(0);
    expect(matches('effect : "cs1"')).toBe(0);
    expect(matches('customer : "zeb"')).toBe(1);
    expect((await store.pageRequests({ limit: 5, text: 'quixote' })).items.map((i) => i.id)).toEqual(['a']);
    expect((await store.pageRequests({ limit: 5, text: 'refunds' })).items).toEqual([]);
    // A row edited behind the store's back is indexed as it now reads.
    raw((db) => db.exec(`UPDATE approvals SET customer = 'davina' WHERE id = 'b'`));
    expect(matches('"vin"')).toBe(1);
    expect((await store.pageRequests({ limit: 5, customer: 'DAVINA' })).items.map((i) => i.id)).toEqual([
      'b',
    ]);
    // The index's own pages: FTS5 segments (trigrams are stored folded, most of them whole).
    const indexBytes = () =>
      raw((db) =>
        db
          .prepare('SELECT block FROM approvals_search_data')
          .all()
          .map((row) => Buffer.from(row.block as Uint8Array).toString('latin1'))
          .join(''),
      );
    expect(indexBytes()).toContain('zeb');
    // Erased: the rows go, and so does every trigram of them in the index (secure-delete: a
    // delete rewrites the segments, instead of leaving a tombstone until they merge).
    await store.decide('a', byPerson('rejected', 40));
    const erased = await store.erasePrincipal({ principal: 'Zebulon Quixote', at: at(50) });
    expect(erased.requests).toBe(1);
    expect(matches('"zeb"')).toBe(0);
    expect((await store.pageRequests({ limit: 5, text: 'quixote' })).items).toEqual([]);
    expect(indexBytes()).not.toMatch(/zeb|uix|xot/);
    raw((db) => db.exec(`INSERT INTO approvals_search (approvals_search) VALUES ('integrity-check')`));
  });

  it('the text search migration indexes the requests already stored, but no sealed preview', async () => {
    const textSearch = migrations.findIndex((text) => text.includes('CREATE VIRTUAL TABLE approvals_search'));
    expect(textSearch).toBeGreaterThan(0);
    raw((db) => {
      for (const text of migrations.slice(0, textSearch)) db.exec(text);
      db.exec(`PRAGMA user_version = ${textSearch}`);
      const insert = db.prepare(
        `INSERT INTO approvals (id, session, agent, call_id, tool, args_json, args_hash, effect, created_at,
           expires_at, status, customer) VALUES (?, 's1', 'bookstore', ?, 'refund', '{}', ?, ?, ?, ?, 'pending', ?)`,
      );
      insert.run(
        'plain',
        'c1',
        '0'.repeat(64),
        'Refunds 12.00 on order 1040.',
        at(1),
        at(100),
        'Carol Jones',
      );
      insert.run('sealed', 'c2', '0'.repeat(64), 'cs1t:dk_1:AAAArefunds', at(2), at(100), 'dave');
    });
    const store = open();
    expect(matches('effect : "ref"')).toBe(1);
    expect(matches('effect : "cs1"')).toBe(0);
    expect(matches('customer : "dav"')).toBe(1);
    expect((await store.pageRequests({ limit: 5, text: 'REFUNDS' })).items.map((i) => i.id)).toEqual([
      'plain',
    ]);
  });
});
