// Kept apart from connection.ts so the public types never mention pg's: a TypeScript user
// of createPostgresStore does not need @types/pg.
export interface PoolOptions {
  /** Connections this process may open (default 10: POOL_MAX). */
  max?: number;
  /** How long to wait for a connection, new or pooled, before STORE_UNAVAILABLE (default 5000). */
  connectionTimeoutMillis?: number;
  /** How long an unused connection stays open (default 10000). */
  idleTimeoutMillis?: number;
}

/** Connections a store's pool opens at most unless `max` says otherwise. */
export const POOL_MAX = 10;

/** How many connections the pool `options` describe may open. */
export function poolMax(options: PoolOptions | undefined): number {
  return options?.max ?? POOL_MAX;
}
