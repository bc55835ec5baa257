import type { PagePlan } from '../request-page.ts';

/*
 * SQLite's text search. `approvals_search` (migrations.ts, "text search") is an FTS5 table
 * with the trigram tokenizer, kept by triggers: one row per request, by rowid, holding its
 * searchable effect (null where sealed, sql/request-page-sql.ts: searchableEffect) and its
 * customer. Any three characters of a needle are a trigram every matching row holds, so the
 * rows holding a few of them are a superset of the matches, which the page's LIKEs then
 * decide exactly.
 *
 * FTS5 keeps no statistics, and a trigram common to every row ("cus" of "customer") costs its
 * whole posting list to intersect: asked for the needle "customer c-7." as one phrase, FTS5
 * reads eleven lists of 100,000 entries at 100,000 requests to find 200. So trigrams are
 * counted first, each up to a cap (a count stops at NARROWING_CAP + 1 entries), from the
 * needle's end (where an order number or a name's distinguishing part tends to be), and the
 * first one in at most NARROWING_CAP rows is the one asked for: the page reads those rows by
 * rowid and sorts them. Counting more would cost about what it saves (a capped count reads as
 * many entries as the page reads candidates). When no trigram is rare the needle is common,
 * and the ordered walk finds a page quickly; needles under three characters have no trigram.
 * Both walk, as before.
 */

/** A trigram in more requests than this does not narrow a page: it walks instead. */
export const NARROWING_CAP = 1000;

/** At most this many of a needle's trigrams are counted; any of them narrows as well. */
export const MAX_PROBES = 8;

/** How many rows hold a MATCH, counted up to ?2. */
export const MATCH_COUNT_SQL =
  'SELECT count(*) AS n FROM (SELECT 1 FROM approvals_search WHERE approvals_search MATCH ?1 LIMIT ?2)';

/**
 * The distinct trigrams of `needle` as FTS5's trigram tokenizer cuts text (by character,
 * i.e. code point), at most MAX_PROBES of them, spread from its start to its end.
 */
export function trigramsOf(needle: string): string[] {
  const characters = [...needle];
  const distinct = new Set<string>();
  for (let start = 0; start + 3 <= characters.length; start++) {
    distinct.add(characters.slice(start, start + 3).join(''));
  }
  const all = [...distinct];
  if (all.length <= MAX_PROBES) return all;
  return Array.from(
    { length: MAX_PROBES },
    (_, index) => all[Math.round((index * (all.length - 1)) / (MAX_PROBES - 1))] as string,
  );
}

/** One trigram as an FTS5 phrase, in `column` or in any column. */
export function trigramMatch(trigram: string, column: 'customer' | null): string {
  const phrase = `"${trigram.replaceAll('"', '""')}"`;
  return column === null ? phrase : `customer : ${phrase}`;
}

/**
 * The MATCH that narrows the plan's page to at most NARROWING_CAP candidate rows, or
 * undefined when it should walk: no partial filter the index holds (text: effect or
 * customer; customer), needles under three characters, or no trigram counted in at most
 * NARROWING_CAP rows. `count` is MATCH_COUNT_SQL.
 */
export function narrowing(plan: PagePlan, count: (match: string, cap: number) => number): string | undefined {
  const searches: Array<{ needle: string | undefined; column: 'customer' | null }> = [
    { needle: plan.partial.text, column: null },
    { needle: plan.partial.customer, column: 'customer' },
  ];
  for (const { needle, column } of searches) {
    // No NUL, which would end the FTS5 query string early: planPage refuses one.
    if (needle === undefined) continue;
    for (const trigram of trigramsOf(needle).reverse()) {
      const match = trigramMatch(trigram, column);
      // Every row that matches holds it, and at most NARROWING_CAP rows do (none: an empty page).
      if (count(match, NARROWING_CAP + 1) <= NARROWING_CAP) return match;
    }
  }
  return undefined;
}
