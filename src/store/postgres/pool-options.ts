// Kept apart from connection.ts so the public types never mention pg's: a TypeScript user
// of createPostgresStore does not need @types/pg.
export interface PoolOptions {
  /** Connections this process may open (default 10). */
  max?: number;
  /** How long to wait for a connection, new or pooled, before STORE_UNAVAILABLE (default 5000). */
  connectionTimeoutMillis?: number;
  /** How long an unused connection stays open (default 10000). */
  idleTimeoutMillis?: number;
}
