/**
 * `quick`: PRAGMA quick_check when opening (every b-tree page, not index contents; see docs).
 * Its own file so the store's public types do not pull in `node:sqlite`'s.
 */
export type SqliteCheck = 'quick' | 'none';
