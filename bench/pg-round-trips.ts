import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import type { Store } from '../src/store/store.ts';

/** Statements, round trips and transactions per Store method, as PostgreSQL sees them. */
export interface PgCounts {
  /** Statements sent, BEGIN and COMMIT included. */
  statements: number;
  /**
   * Waits for the server: statements sent while the connection had no other statement
   * outstanding. One pipelined behind another (BEGIN's first statement, a COMMIT sent with
   * the last) rides in the same round trip.
   */
  roundTrips: number;
  /** Server transactions: a BEGIN … COMMIT block, or one statement in autocommit. */
  transactions: number;
  /** Writes to PostgreSQL's sockets, each one system call (src/store/postgres/coalesced-writes.ts). */
  socketWrites: number;
  byMethod: Record<string, MethodCounts>;
}

export interface MethodCounts {
  calls: number;
  statements: number;
  roundTrips: number;
  transactions: number;
}

const method = new AsyncLocalStorage<string>();
let counts: PgCounts = { statements: 0, roundTrips: 0, transactions: 0, socketWrites: 0, byMethod: {} };
const watchedStreams = new WeakSet<object>();
const inTransaction = new WeakSet<object>();
// Statements each client has sent and not yet heard back about.
const outstanding = new WeakMap<object, number>();
let installed = false;

function textOf(config: unknown): string {
  if (typeof config === 'string') return config;
  const text = (config as { text?: unknown } | null)?.text;
  return typeof text === 'string' ? text : '';
}

function bucket(name: string) {
  counts.byMethod[name] ??= { calls: 0, statements: 0, roundTrips: 0, transactions: 0 };
  return counts.byMethod[name];
}

/** The store's liveness connection (src/liveness/postgres/): its lock and pings are per process, not per call. */
function isLiveness(client: object): boolean {
  const parameters = (client as { connectionParameters?: { fallback_application_name?: unknown } })
    .connectionParameters;
  const name = parameters?.fallback_application_name;
  // `countersign-liveness <pid> <token>` (livenessApplicationName).
  return typeof name === 'string' && name.startsWith('countersign-liveness ');
}

/** Counts the writes to a client's socket, wrapped the first time the client sends a statement. */
function watchWrites(client: object): void {
  const stream = (client as { connection?: { stream?: Record<string, unknown> } }).connection?.stream;
  if (stream === undefined || watchedStreams.has(stream)) return;
  watchedStreams.add(stream);
  for (const name of ['_write', '_writev']) {
    const write = stream[name];
    if (typeof write !== 'function') continue;
    stream[name] = function countedWrite(this: unknown, ...args: unknown[]) {
      counts.socketWrites += 1;
      return (write as (...a: unknown[]) => unknown).apply(this, args);
    };
  }
}

/**
 * Wraps pg's Client.query once per process, so every client of every pool (the store's, the
 * server's outbox, pg-boss's) is counted; the Store method in flight is found through
 * AsyncLocalStorage, set by `countedStore`. Statements outside any Store call are filed
 * under `(outside the store)`. The liveness connection's statements (one lock when the store
 * opens, a ping every 2 s) are not counted: they are the process's, whatever it does.
 */
export function installPgCounter(): void {
  if (installed) return;
  installed = true;
  const original = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function counted(this: object, ...args: unknown[]) {
    if (isLiveness(this)) return original.apply(this, args);
    // Only the first word matters; upper-casing a whole CTE per statement cost the server
    // process measurable CPU that the figures then charged to countersign.
    const text = textOf(args[0]).trimStart().slice(0, 8).toUpperCase();
    const where = bucket(method.getStore() ?? '(outside the store)');
    counts.statements += 1;
    where.statements += 1;
    const waiting = outstanding.get(this) ?? 0;
    if (waiting === 0) {
      counts.roundTrips += 1;
      where.roundTrips += 1;
    }
    if (text.startsWith('BEGIN')) {
      inTransaction.add(this);
      counts.transactions += 1;
      where.transactions += 1;
    } else if (text.startsWith('COMMIT') || text.startsWith('ROLLBACK')) {
      inTransaction.delete(this);
    } else if (!inTransaction.has(this)) {
      counts.transactions += 1;
      where.transactions += 1;
    }
    watchWrites(this);
    const sent = original.apply(this, args);
    // The promise form (what the store uses); a callback query (pg-pool's, pg-boss's) is
    // counted as a round trip of its own.
    if (sent instanceof Promise) {
      outstanding.set(this, waiting + 1);
      const done = () => outstanding.set(this, (outstanding.get(this) ?? 1) - 1);
      sent.then(done, done);
    }
    return sent;
  } as typeof pg.Client.prototype.query;
}

export function resetPgCounts(): void {
  counts = { statements: 0, roundTrips: 0, transactions: 0, socketWrites: 0, byMethod: {} };
}

export function pgCounts(): PgCounts {
  return structuredClone(counts);
}

/** The store, with each method call labelled so its statements are counted against it. */
export function countedStore<S extends Store>(inner: S): S {
  return new Proxy(inner, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      return (...args: unknown[]) => {
        bucket(property).calls += 1;
        return method.run(property, () => (value as (...a: unknown[]) => unknown).apply(target, args));
      };
    },
  });
}
