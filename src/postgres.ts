/**
 * `countersign/postgres`: the PostgreSQL store (also a CheckpointStore: workflow runs live
 * in the same schema), the pg-boss continuation queue and the LISTEN/NOTIFY event bus.
 * `pg` and `pg-boss` are imported on first use, not when this entry loads.
 */
export {
  createPostgresEventBus,
  type PostgresEventBus,
  type PostgresEventBusOptions,
} from './events/postgres/postgres-event-bus.ts';
export { createPgBossQueue, type PgBossQueueOptions } from './queue/pg-boss/pg-boss-queue.ts';
export type { PoolOptions } from './store/postgres/pool-options.ts';
export {
  createPostgresStore,
  type PostgresStore,
  type PostgresStoreOptions,
} from './store/postgres/postgres-store.ts';
