import type { Client } from 'pg';
import { failureReason } from '../../core/outage.ts';
import { secureRandomBytes } from '../../core/random-bytes.ts';
import { CONFIRM_MS } from '../dead-owners.ts';
import type { Liveness, LivenessChange } from '../liveness.ts';
import { serverClock } from './server-clock.ts';

export interface PostgresLivenessOptions {
  /** The store's server and database: advisory locks are per database. */
  connectionString: string;
  /**
   * Runs `released`'s one statement, and `now`'s: the store's own pool, so a lost connection
   * there is STORE_UNAVAILABLE like any store call.
   */
  query: (text: string, values?: readonly unknown[]) => Promise<Array<Record<string, unknown>>>;
  /** Between pings of the connection holding the lock (default 2000 ms). */
  checkMs?: number;
  /** Connecting, and a ping's answer, time out after this (default 5000 ms). */
  timeoutMs?: number;
  /**
   * The longest pause between attempts to hold the lock again after losing it (default
   * MAX_BACKOFF_MS; jittered up to a quarter more).
   */
  maxBackoffMs?: number;
}

/**
 * The default longest pause between attempts to lock the key again: with its jitter at most
 * half of CONFIRM_MS, so once the server answers again (after a restart, however long) this
 * process's next attempt comes, and has the other half to connect and lock, before a judge
 * who looked at that moment looks again. A pause of a second let a live process be judged
 * dead after most restarts. The price, while a server refuses for good: five connection
 * attempts a second per process.
 */
export const MAX_BACKOFF_MS = (CONFIRM_MS * 2) / 5;

/** `pg` + the lock key in hex: what lease owners carry (lease-owner.ts). */
const TOKEN = /^pg([0-9a-f]{1,16})$/;

export function tokenOfKey(key: bigint): string {
  return `pg${key.toString(16)}`;
}

/**
 * What pg_stat_activity shows for the connection holding `key` (unless the URL's
 * `application_name` or PGAPPNAME says otherwise): this process's pid and its token, so one
 * process's lock connection can be found, and ended, without touching any other's. At most
 * 21 + 10 + 1 + 18 = 50 bytes: under PostgreSQL's 63 (NAMEDATALEN − 1), which it would cut.
 */
export function livenessApplicationName(key: bigint, pid = process.pid): string {
  return `countersign-liveness ${pid} ${tokenOfKey(key)}`;
}

/** The advisory lock key a token names, or null for a token this backend did not mint. */
export function keyOfToken(token: string): bigint | null {
  const hex = TOKEN.exec(token)?.[1];
  if (hex === undefined) return null;
  const key = BigInt(`0x${hex}`);
  return key > 0n && key < 2n ** 62n ? key : null;
}

/** 62 random bits, never 0: positive, so `classid << 32 | objid` in pg_locks gives it back. */
function newKey(): bigint {
  const key = secureRandomBytes(8).readBigUInt64BE() >> 2n;
  return key === 0n ? 1n : key;
}

/**
 * The keys of `$1` that some backend of this database holds as a session advisory lock
 * (the one-bigint form: objsubid 1). pg_locks is read, never a lock taken: trying someone
 * else's lock would, for that moment, make it look held by this process instead. One scan
 * of the server's lock table, whatever the number of keys asked about.
 */
const HELD_SQL = `SELECT ((l.classid::bigint << 32) | l.objid::bigint)::text AS key
  FROM pg_catalog.pg_locks l
  WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
    AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
    AND ((l.classid::bigint << 32) | l.objid::bigint) = ANY($1::bigint[])`;

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Liveness on PostgreSQL: this process holds a session advisory lock on a key of its own
 * (random, 62 bits) on one dedicated connection for as long as it lives, from the first time
 * it mints a lease owner (the first `token()`). A process that dies
 * (SIGKILL, OOM, a crash) has its socket closed by the kernel; PostgreSQL ends the session and
 * drops the lock at once. Another process judges a token released when no backend of the
 * database holds its key (`released`, reading pg_locks).
 *
 * While this process lives, the lock must not go missing for long, or others would take its
 * leases over (their commits then fail with SESSION_BUSY, and a call cut off mid-run would be
 * marked unknown):
 * - **The connection drops** (a terminated backend, an idle-connection killer, a restart): it
 *   is opened again at once and the same key locked; while that fails, again after 50 ms,
 *   doubling to at most `maxBackoffMs` (MAX_BACKOFF_MS: five attempts a second, so a server
 *   that refuses for good is not flooded, and one back from a restart is found in time). A
 *   token must stay released for CONFIRM_MS (dead-owners.ts) before anyone acts on it.
 *   Listeners hear the loss, each failed attempt (`retry`, with its error) and the hold again.
 * - **No answer** (the server failed over, a dropped NAT entry: the socket still looks open
 *   here): a ping every `checkMs`; one unanswered for `timeoutMs` makes it lock the key on a
 *   new connection *before* letting go of the old one. If the new one gets the lock, the old
 *   backend had lost it anyway; if not, the old backend still holds it, others see this
 *   process alive, and it is kept.
 * - The connection is named `countersign-liveness <pid> <token>` in pg_stat_activity
 *   (livenessApplicationName; the URL's `application_name` or PGAPPNAME wins), so one
 *   process's lock connection can be told from the others'.
 * - `idle_session_timeout` is turned off for this session (a server setting would otherwise
 *   end it), and the socket, once it holds the lock, is unref'd: it never keeps a finished
 *   process running.
 * - While it holds no lock, `token()` is null: owners minted then carry none and are judged as
 *   owners from before this existed (their lease lapses after its term).
 *
 * It needs a real session: through a transaction-pooling proxy (PgBouncer in transaction
 * mode) the lock would stay on a pooled server connection after the process died. Give it a
 * direct connection string, or turn it off (docs/deployment-postgres.md#pgbouncer).
 */
export function createPostgresLiveness(options: PostgresLivenessOptions): Liveness {
  const checkMs = options.checkMs ?? 2000;
  const timeoutMs = options.timeoutMs ?? 5000;
  const maxBackoffMs = options.maxBackoffMs ?? MAX_BACKOFF_MS;
  const listeners = new Set<(change: LivenessChange) => void>();
  let key = newKey();
  let everHeld = false;
  let held: Client | null = null;
  let closed = false;
  let attempt: Promise<boolean> | null = null;
  let failures = 0;
  /** Why the latest attempt to hold the key failed: told to listeners while it is lost. */
  let failure = '';
  let retryTimer: NodeJS.Timeout | undefined;
  let checking = false;
  /** The ping in flight on the held connection: one unanswered is waited for again, not repeated. */
  let ping: { client: Client; answer: Promise<void> } | null = null;

  function emit(change: LivenessChange): void {
    for (const listener of [...listeners]) {
      try {
        listener(change);
      } catch {
        // A broken listener must not stop the others, nor the lock.
      }
    }
  }

  function release(client: Client): void {
    client.removeAllListeners('end');
    client.removeAllListeners('error');
    client.on('error', () => undefined);
    client.end().catch(() => undefined);
  }

  function lost(client: Client, reason: string): void {
    if (held !== client) return;
    held = null;
    release(client);
    emit({ held: false, token: tokenOfKey(key), reason });
    failures = 0;
    scheduleRetry();
  }

  async function connect(): Promise<Client> {
    const { default: pg } = await import('pg');
    const client = new pg.Client({
      connectionString: options.connectionString,
      connectionTimeoutMillis: timeoutMs,
      // TCP keepalive: a peer that vanished is found by the kernel too, not only by the ping.
      keepAlive: true,
      // A fallback: the URL's application_name, or PGAPPNAME, still wins.
      fallback_application_name: livenessApplicationName(key),
    });
    client.on('error', (error: Error) => lost(client, failureReason(error)));
    client.on('end', () => lost(client, 'the connection was closed'));
    try {
      await withTimeout(client.connect(), timeoutMs);
      // A server-wide idle_session_timeout (PostgreSQL 14+) would end this idle session.
      await withTimeout(
        client.query(
          `SELECT set_config(name, '0', false) FROM pg_catalog.pg_settings WHERE name = 'idle_session_timeout'`,
        ),
        timeoutMs,
      );
      return client;
    } catch (error) {
      release(client);
      throw error;
    }
  }

  /** One attempt to hold the key on a new connection; true when it does. */
  function hold(): Promise<boolean> {
    attempt ??= (async () => {
      let client: Client | undefined;
      try {
        client = await connect();
        const { rows } = await withTimeout(
          client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS locked', [
            key.toString(),
          ]),
          timeoutMs,
        );
        if (rows[0]?.locked !== true || closed) {
          // Held elsewhere: before the first hold, a key someone else chose (62 random bits:
          // in theory); after it, this process's previous backend, which the server has not
          // ended yet. Others see the key held, so this process alive, meanwhile.
          if (!everHeld) key = newKey();
          failure = 'its key is locked by another session';
          release(client);
          return false;
        }
        // Only now (pg's Client#unref, missing from its types): while an attempt is under way
        // someone may be waiting for it (token()), and an unref'd socket would let the process
        // exit under them; once held, the socket must never keep a finished process running.
        (client as unknown as { unref(): void }).unref();
        const previous = held;
        held = client;
        everHeld = true;
        failures = 0;
        if (previous !== null) release(previous);
        else emit({ held: true, token: tokenOfKey(key) });
        return true;
      } catch (error) {
        failure = failureReason(error);
        if (client !== undefined) release(client);
        return false;
      }
    })().finally(() => {
      attempt = null;
    });
    return attempt;
  }

  function scheduleRetry(): void {
    if (closed || held !== null || retryTimer !== undefined) return;
    const pause =
      failures === 0 ? 0 : Math.min(maxBackoffMs, 25 * 2 ** failures) * (0.75 + Math.random() * 0.5);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void hold().then((ok) => {
        if (ok) return;
        failures += 1;
        // Not a change: told so that a log can say why it is still not held (throttled there).
        if (everHeld && held === null && !closed)
          emit({ held: false, token: tokenOfKey(key), reason: failure, retry: true });
        scheduleRetry();
      });
    }, pause);
    retryTimer.unref();
  }

  function pingOf(client: Client): Promise<void> {
    if (ping?.client === client) return ping.answer;
    const answer = client.query('SELECT 1').then(() => undefined);
    ping = { client, answer };
    const settled = () => {
      if (ping?.answer === answer) ping = null;
    };
    answer.then(settled, settled);
    return answer;
  }

  async function check(): Promise<void> {
    if (closed || checking) return;
    const current = held;
    if (current === null) return scheduleRetry();
    checking = true;
    try {
      await withTimeout(pingOf(current), timeoutMs);
    } catch {
      // Make before break: see the comment above the function.
      if (held === current && !closed) await hold();
    } finally {
      checking = false;
    }
  }

  let first: Promise<void> | undefined;
  let pinger: NodeJS.Timeout | undefined;

  /** Started by the first token(): a process that never takes a lease (a CLI read) opens nothing. */
  function start(): Promise<void> {
    if (first !== undefined || closed) return first ?? Promise.resolve();
    first = hold().then((ok) => {
      if (!ok) scheduleRetry();
    });
    pinger = setInterval(() => void check(), checkMs);
    pinger.unref();
    return first;
  }

  return {
    kind: 'postgres',

    async token() {
      await start();
      return held === null ? null : tokenOfKey(key);
    },

    async released(tokens) {
      const asked = new Map<string, string[]>();
      for (const token of new Set(tokens)) {
        const parsed = keyOfToken(token);
        if (parsed === null) continue;
        const decimal = parsed.toString();
        asked.set(decimal, [...(asked.get(decimal) ?? []), token]);
      }
      if (asked.size === 0) return new Set<string>();
      // This process's own key is asked about too, while it holds it: if it is not seen held,
      // the store's reads do not reach where the locks are (a liveness URL naming another
      // database, or a replica; a failover half done), every key would look released, and
      // live processes would be judged dead. Then nobody is: their leases lapse at their term.
      const own = held === null ? null : key.toString();
      const rows = await options.query(HELD_SQL, [own === null ? [...asked.keys()] : [...asked.keys(), own]]);
      const stillHeld = new Set(rows.map((row) => String(row.key)));
      if (own !== null && !stillHeld.has(own)) return new Set<string>();
      const released = new Set<string>();
      for (const [decimal, named] of asked)
        if (!stillHeld.has(decimal)) for (const t of named) released.add(t);
      return released;
    },

    now: serverClock(options.query),

    onChange(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },

    async close() {
      if (closed) return;
      closed = true;
      if (pinger !== undefined) clearInterval(pinger);
      if (retryTimer !== undefined) clearTimeout(retryTimer);
      retryTimer = undefined;
      listeners.clear();
      await attempt?.catch(() => undefined);
      const current = held;
      held = null;
      if (current !== null) {
        current.removeAllListeners('end');
        current.removeAllListeners('error');
        current.on('error', () => undefined);
        // Referenced again for the goodbye: a caller awaiting close() must not see the process
        // exit under it while the socket closes.
        (current as unknown as { ref(): void }).ref();
        await current.end().catch(() => undefined);
      }
    },
  };
}
