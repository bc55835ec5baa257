import { createRequire } from 'node:module';
import type { Pool, PoolClient } from 'pg';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import { coalesceWrites } from './coalesced-writes.ts';
import { connectionLostError, isConnectionLost, isRetryable, translatePgError } from './pg-errors.ts';
import { type PoolOptions, poolMax } from './pool-options.ts';

export type Row = Record<string, unknown>;
/** Runs one parameterized statement and returns its rows. */
export type Query = (text: string, values?: readonly unknown[], options?: QueryOptions) => Promise<Row[]>;

export interface QueryOptions {
  /**
   * False: planned for its values every time (an unnamed statement) instead of prepared once
   * per connection. For a statement whose best plan depends on a value: after five runs a
   * prepared statement may keep a generic plan, made without the values, and a partial text
   * match planned without its needle cannot tell a rare one (the trigram index) from a
   * common one (the ordered walk).
   */
  prepared?: boolean;
  /**
   * Inside a transaction: this is its last statement, so COMMIT is sent right behind it on the
   * same connection (pipelined) instead of after its reply: one round trip fewer. Only for a
   * statement whose success leaves nothing for the caller to decide: a statement that can
   * succeed and still call for a rollback (a compare-and-set that matched no row) must raise
   * an error in SQL instead, because by the time its rows arrive the COMMIT is on its way. If
   * it fails, PostgreSQL answers that COMMIT with a rollback. Ignored in autocommit.
   */
  last?: boolean;
}

export interface Connection {
  /** One statement in autocommit: it is its own transaction, one round trip. */
  query: Query;
  /**
   * BEGIN … COMMIT on one connection, retried as a whole after a serialization failure or
   * deadlock. With `chain`: `chain.committing` is told, once this transaction's COMMIT is
   * queued, how the next transaction may follow it on the same connection (TransactionChain);
   * `chain.after` is where this one follows another's (its first attempt only).
   */
  transaction<T>(work: (query: Query) => Promise<T>, chain?: TransactionChain): Promise<T>;
  /** A REPEATABLE READ READ ONLY transaction: several reads see one snapshot. */
  snapshotRead<T>(work: (query: Query) => Promise<T>): Promise<T>;
  /** A connection of its own for work that manages its own transactions (migrations). */
  withClient<T>(work: (query: Query) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * The connection a transaction has queued its COMMIT on, lent to the next transaction: that
 * one's BEGIN and statements go out behind the COMMIT, in the same socket write when they are
 * sent in the same turn (coalesced-writes.ts), and PostgreSQL runs them once the COMMIT is
 * done. `take` lends it once (the caller then owns a share of it until its transaction ends);
 * once `committing` has returned, or once taken, it gives nothing.
 */
export interface FollowOn {
  take(): Lease | undefined;
}

export interface TransactionChain {
  /** Called once the COMMIT is queued, with the connection offered to the next transaction. */
  committing?(next: FollowOn): void;
  /** The connection to run on, offered by the transaction before (used if still on offer). */
  after?: FollowOn;
}

const ATTEMPTS = 5;

/**
 * Runs `work` again after a failure PostgreSQL rolled back completely (40001, 40P01), with a
 * short jittered pause, at most `attempts` times in all. Nothing else is retried: after a
 * network error a COMMIT may or may not have happened, and only the caller can know what
 * repeating the write would mean.
 */
export async function withRetries<T>(work: () => Promise<T>, attempts = ATTEMPTS): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= attempts || !isRetryable(error)) throw error;
      const pause = 2 ** attempt * (2 + Math.random() * 3);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

export async function openPool(connectionString: string, options: PoolOptions): Promise<Pool> {
  // Imported here, not at the top: SQLite and memory users never load pg.
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({
    connectionString,
    max: poolMax(options),
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5000,
    idleTimeoutMillis: options.idleTimeoutMillis ?? 10_000,
    // What pg_stat_activity shows unless the URL (?application_name=) or PGAPPNAME says otherwise.
    fallback_application_name: 'countersign',
    // Every transaction here lasts milliseconds; one idle for a minute belongs to a stuck
    // process (stopped, swapping) and would hold row locks, the audit head's among them,
    // that every other process waits on. The server ends it and its locks.
    idle_in_transaction_session_timeout: 60_000,
    // A process that forgets close() still exits once its connections are idle.
    allowExitOnIdle: true,
    // Statements sent before the previous one's reply (BEGIN with a transaction's first
    // statement, COMMIT with its last) share a round trip. Every other statement here is
    // awaited before the next is sent, as without it.
    pipeline: true,
  });
  // An idle connection that dies (server restart, network blip) is reported here and dropped
  // from the pool; without a listener the 'error' event would crash the process.
  pool.on('error', () => {});
  // pg-pool takes its own 'error' listener off a client while it is checked out, and a socket
  // that dies then (a terminated backend, a restart) emits 'error' on the client, which unheard
  // ends the process. Listening per checkout is not enough: the server's goodbye can arrive in
  // the same packet as the reply that completed the checkout, before any caller code runs. So
  // every client is listened to for its whole life; the statement in flight rejects by itself,
  // and the listener only remembers that the connection is gone, so it is closed on release.
  pool.on('connect', (client) => {
    client.on('error', (error: Error) => {
      if (!lostClients.has(client)) lostClients.set(client, error);
    });
  });
  return pool;
}

/**
 * A pipelined statement's promise, marked as handled: its failure is read when it is awaited,
 * which may come after the failure of a statement queued behind it.
 */
function settled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

let prepareValue: ((value: unknown) => unknown) | undefined;

/**
 * A statement value as pg sends it (its own `prepareValue`, loaded on first use: pg is
 * loaded by then). Turning a turned value again changes nothing (text, Buffer or null).
 */
function pgValue(value: unknown): unknown {
  prepareValue ??= (createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue: typeof pgValue })
    .prepareValue;
  return prepareValue(value);
}

/** A statement without values (BEGIN, COMMIT, ROLLBACK), sent with whatever else goes out this turn. */
function simple(client: PoolClient, text: string): Promise<unknown> {
  coalesceWrites(client);
  return client.query(text);
}

/** The error each pooled connection reported when it died, if it did. */
const lostClients = new WeakMap<PoolClient, Error>();

/** A connection checked out of the pool, listened to for as long as it is out. */
export interface Lease {
  client: PoolClient;
  /** The error the connection itself reported while checked out, if any. */
  lost(): Error | undefined;
  /** Marks the connection to be closed on release instead of pooled. */
  discard(): void;
  /**
   * Gives this holder's share back. The last share returns the connection to the pool, or
   * closes it if any holder failed on it, discarded it or gave an `error`.
   */
  release(error?: Error): void;
  /**
   * Another holder's share of the same connection (a transaction queued behind this one's
   * COMMIT): the connection goes back to the pool only once every share is released, so no
   * other caller is handed it while a transaction on it is still open. Undefined once every
   * share has been released: the connection may already be someone else's.
   */
  share(): Lease | undefined;
}

function lease(client: PoolClient): Lease {
  let discarded = false;
  let failure: Error | undefined;
  let holders = 0;
  const share = (): Lease | undefined => (holders > 0 ? view() : undefined);
  const view = (): Lease => {
    holders += 1;
    let released = false;
    const held: Lease = {
      client,
      lost: () => lostClients.get(client),
      discard() {
        discarded = true;
      },
      release(error) {
        if (released) return;
        released = true;
        failure ??= error;
        holders -= 1;
        if (holders > 0) return;
        const reason =
          lostClients.get(client) ??
          failure ??
          (discarded ? new Error('discarded after a failure') : undefined);
        // With a reason pg-pool closes the connection instead of pooling it.
        client.release(reason);
      },
      share,
    };
    return held;
  };
  return view();
}

/**
 * The store's access to one pool. Every statement is prepared once per connection under a
 * name derived from its text (a step's commit is then parsed and planned once, not 1000 times),
 * and every failure leaves here as a typed error naming the server.
 */
export function createConnection(pool: Pool, target: string): Connection {
  const names = new Map<string, string>();
  let closed = false;

  function nameOf(text: string): string {
    let name = names.get(text);
    if (name === undefined) {
      name = `countersign_${names.size + 1}`;
      names.set(text, name);
    }
    return name;
  }

  function queryOn(client: PoolClient): Query {
    return async (text, values = [], options = {}) => {
      coalesceWrites(client);
      const result = await client.query(
        options.prepared === false
          ? { text, values: [...values] }
          : { name: nameOf(text), text, values: [...values] },
      );
      return result.rows as Row[];
    };
  }

  function assertOpen(): void {
    if (closed) {
      throw new StoreUnavailableError(`The store at ${target} is closed.`, {
        hint: 'Open the store again; a closed store cannot be reused.',
      });
    }
  }

  async function checkout(): Promise<Lease> {
    assertOpen();
    let client: PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw translatePgError(error, target, true);
    }
    return lease(client);
  }

  /**
   * Runs `work` on a leased connection (`lent`, if one is lent and still on offer), which is
   * closed instead of pooled if the work failed on it.
   */
  async function onLease<T>(work: (held: Lease) => Promise<T>, lent?: FollowOn): Promise<T> {
    const held = lent?.take() ?? (await checkout());
    let broken: Error | undefined;
    try {
      return await work(held);
    } catch (error) {
      if (isConnectionLost(error)) broken = error as Error;
      throw error;
    } finally {
      held.release(broken);
    }
  }

  function autocommit(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<Row[]> {
    return onLease(async (held) => {
      try {
        return await queryOn(held.client)(text, values, options);
      } catch (error) {
        if (!isConnectionLost(error) && held.lost() === undefined) throw error;
        held.discard();
        throw connectionLostError(error, target, /^\s*SELECT\b/i.test(text) ? 'read' : 'unknown');
      }
    });
  }

  function inTransaction<T>(
    begin: string,
    work: (query: Query) => Promise<T>,
    chain: TransactionChain = {},
  ): Promise<T> {
    return onLease(async (held) => {
      const { client } = held;
      // Set once COMMIT is on the wire: a connection lost after that leaves the outcome unknown.
      let committing = false;
      let commit: Promise<unknown> | undefined;
      const statement = queryOn(client);
      const queueCommit = () => {
        committing = true;
        commit = settled(simple(client, 'COMMIT'));
        if (chain.committing) {
          // On offer only while `committing` runs: the next transaction takes it as it starts,
          // in the same call. One that starts later could find it released, maybe another's.
          let open = true;
          chain.committing({
            take() {
              if (!open) return undefined;
              open = false;
              return held.share();
            },
          });
          open = false;
        }
      };
      const query: Query = (text, values, options) => {
        if (commit !== undefined) {
          return Promise.reject(new Error('A statement after the one marked last in its transaction.'));
        }
        if (options?.last !== true) return statement(text, values, options);
        // pg turns values into text as it sends a statement, and one it cannot turn (a
        // circular object) fails the statement in the client, before anything of it is sent:
        // the COMMIT behind it would then commit everything before it. So they are turned
        // here first, and nothing is sent if that fails; pg passes turned values through.
        let sent: unknown[];
        try {
          sent = (values ?? []).map((value) => pgValue(value));
        } catch (error) {
          return Promise.reject(error);
        }
        const rows = statement(text, sent, options);
        queueCommit();
        return rows;
      };
      try {
        // Sent without waiting for its reply: the first statement follows it on the same
        // connection, and both replies come back together. BEGIN fails only when the
        // connection does, and then every statement queued behind it fails the same way.
        const begun = settled(simple(client, begin));
        const result = await work(query);
        await begun;
        if (commit === undefined) queueCommit();
        await commit;
        return result;
      } catch (error) {
        if (isConnectionLost(error) || held.lost() !== undefined) {
          // No ROLLBACK to send: the server ends the transaction with the session.
          held.discard();
          if (CountersignError.is(error) && !isConnectionLost(error)) throw error;
          throw connectionLostError(error, target, committing ? 'unknown' : 'rolled-back');
        }
        // A queued COMMIT ends the transaction either way (a failed statement turns it into a
        // rollback). Nothing may follow it: the next transaction may already be queued behind
        // it on this connection (TransactionChain), and a ROLLBACK would undo that one.
        if (commit !== undefined) {
          // Its answer is awaited, as a ROLLBACK's was: the connection is clean when released,
          // or closed if it died meanwhile (the ROLLBACK's failure used to tell).
          await commit.then(
            () => undefined,
            (failed: unknown) => {
              if (isConnectionLost(failed)) held.discard();
            },
          );
          throw error;
        }
        try {
          await simple(client, 'ROLLBACK');
        } catch {
          // The connection is unusable; it is closed instead of pooled.
          held.discard();
        }
        throw error;
      }
    }, chain.after);
  }

  async function translated<T>(work: () => Promise<T>): Promise<T> {
    assertOpen();
    try {
      return await withRetries(work);
    } catch (error) {
      throw translatePgError(error, target);
    }
  }

  return {
    query: (text, values, options) => translated(() => autocommit(text, values, options)),
    transaction: (work, chain) => translated(() => inTransaction('BEGIN', work, chain)),
    snapshotRead: (work) =>
      translated(() => inTransaction('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', work)),
    async withClient(work) {
      // Not retried as a whole: the work runs its own transactions (migrations) and knows how.
      try {
        return await onLease(async (held) => {
          try {
            return await work(
              async (text, values = []) => (await held.client.query(text, [...values])).rows as Row[],
            );
          } catch (error) {
            // Whatever the work left open (a migration's transaction) must not reach the next user.
            held.discard();
            if (isConnectionLost(error) || held.lost() !== undefined)
              throw connectionLostError(error, target, 'unknown');
            throw error;
          }
        });
      } catch (error) {
        throw translatePgError(error, target);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await pool.end();
    },
  };
}
