/**
 * Whether a store's partial text matches (`text`, `customer`) are served by an index. Only a
 * store that can run without its index has it: PostgreSQL, where the trigram indexes need
 * pg_trgm and the privilege to install it (docs/deployment-postgres.md#text-search). Without
 * them every list still answers, by walking the list as before; the server says so once when
 * it starts, with the reason.
 */
export type TextSearchState = { indexed: true } | { indexed: false; reason: string };

export interface TextSearchStatus {
  /** Found when the store opened. A plain value, so store wrappers pass it through. */
  readonly textSearch: TextSearchState;
}

export function hasTextSearchStatus(value: unknown): value is TextSearchStatus {
  const state = (value as { textSearch?: unknown } | null)?.textSearch;
  return (
    typeof state === 'object' &&
    state !== null &&
    typeof (state as { indexed?: unknown }).indexed === 'boolean'
  );
}

/** The line a server logs once when text search walks, or null when it is indexed. */
export function textSearchNotice(store: unknown): string | null {
  if (!hasTextSearchStatus(store) || store.textSearch.indexed) return null;
  return (
    `countersign: text search (?text=, the inbox's search, --text) walks the list on this store: ${store.textSearch.reason}. ` +
    'Lists still answer, but a rare needle reads rows until it fills a page. Install pg_trgm ' +
    '(CREATE EXTENSION pg_trgm, as a role allowed to) and restart to index it; see docs/deployment-postgres.md#text-search.'
  );
}
