import type { Client, Pool } from 'pg';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import type { CountersignEvent, EventBus, EventListener } from '../event-bus.ts';

export interface PostgresEventBusOptions {
  /** postgres://USER:PASSWORD@HOST:PORT/DATABASE, with any option pg reads (sslmode, …). */
  connectionString: string;
  /** The NOTIFY channel (default `countersign_events`): every instance of one deployment uses the same. */
  channel?: string;
  /** Pause before the first reconnect attempt after the listening connection drops (default 100 ms); doubles up to `maxBackoffMs`. */
  backoffMs?: number;
  /** The longest pause between reconnect attempts (default 5000 ms). */
  maxBackoffMs?: number;
}

export interface PostgresEventBus extends EventBus {
  readonly channel: string;
  /**
   * Resolves once LISTEN is active on the current connection (starting it if no one has
   * subscribed yet). Events published before that are not seen: NOTIFY keeps no history.
   */
  listening(): Promise<void>;
}

export const DEFAULT_CHANNEL = 'countersign_events';

/**
 * PostgreSQL refuses a NOTIFY payload of 8000 bytes or more (the default build's limit).
 * Payloads are measured as UTF-8 bytes, as the server measures them.
 */
export const NOTIFY_PAYLOAD_LIMIT = 8000;

const eventTypes = new Set<string>([
  'approval.requested',
  'approval.decided',
  'execution.finished',
  'turn.finished',
  'workflow.requested',
  'workflow.answered',
  'workflow.expired',
]);

const fits = (payload: string) => Buffer.byteLength(payload, 'utf8') < NOTIFY_PAYLOAD_LIMIT;

/**
 * The form of an event that is sent when the whole event does not fit in one NOTIFY.
 * Only two events carry unbounded content: a request's arguments and a turn's reply. Their
 * trimmed form drops that content (args and decision become null, reply becomes null) and
 * keeps the type, the time and every id, so a subscriber still knows what happened and
 * re-reads the request or session from the store — events are notifications, never the
 * record. Other events hold only ids and short enums and always fit.
 */
export function trimEvent(event: CountersignEvent): CountersignEvent {
  switch (event.type) {
    case 'approval.requested':
      return { ...event, approval: { ...event.approval, args: null, decision: null } };
    case 'turn.finished':
      return { ...event, reply: null };
    default:
      return event;
  }
}

/**
 * What goes over the channel: `{ "event": …, "trimmed": true }` when the event had to be
 * trimmed to fit (see `trimEvent`). Throws when even the trimmed form does not fit, which
 * takes ids far beyond the 128 characters the store allows.
 */
export function encodeNotification(event: CountersignEvent): string {
  const whole = JSON.stringify({ event });
  if (fits(whole)) return whole;
  const trimmed = JSON.stringify({ event: trimEvent(event), trimmed: true });
  if (fits(trimmed)) return trimmed;
  throw new Error(
    `A ${event.type} event does not fit in a PostgreSQL notification even trimmed (${Buffer.byteLength(trimmed)} bytes).`,
  );
}

/** The event in a notification, or null for anything else someone sent on the channel. */
export function decodeNotification(payload: string | undefined): CountersignEvent | null {
  if (payload === undefined) return null;
  try {
    const parsed = JSON.parse(payload) as { event?: { type?: unknown } } | null;
    const event = parsed?.event;
    if (typeof event !== 'object' || event === null || typeof event.type !== 'string') return null;
    return eventTypes.has(event.type) ? (event as CountersignEvent) : null;
  } catch {
    return null;
  }
}

function assertChannel(channel: string): string {
  // An unquoted-identifier shape: the same name works in LISTEN "…" and in pg_notify('…').
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) {
    throw new Error(
      `Event channel "${channel}" is not valid: use 1-63 lowercase letters, digits and _, not starting with a digit.`,
    );
  }
  return channel;
}

/**
 * Events across every instance that shares one PostgreSQL database, over LISTEN/NOTIFY.
 *
 * publish: `SELECT pg_notify($channel, $json)` on a small pool (two connections), in
 * autocommit, so the notification goes out at once; the server delivers it to every
 * listening connection, this instance's own included, so local subscribers see their own
 * events exactly once, as with the memory bus.
 *
 * subscribe: the first subscriber starts one dedicated connection (not from the pool) that
 * runs LISTEN. If it drops (server restart, failover, a terminated backend, network), it is
 * opened again after a pause that starts at `backoffMs` and doubles up to `maxBackoffMs`,
 * with jitter, until it succeeds or the bus is closed. Notifications sent while no
 * connection was listening are lost; a subscriber that must not miss state re-reads the
 * store (the inbox already does on refresh).
 *
 * pg is imported on first use, so importing this module costs nothing to SQLite users.
 */
export function createPostgresEventBus(options: PostgresEventBusOptions): PostgresEventBus {
  const channel = assertChannel(options.channel ?? DEFAULT_CHANNEL);
  const baseBackoff = options.backoffMs ?? 100;
  const maxBackoff = options.maxBackoffMs ?? 5000;
  const listeners = new Set<EventListener>();
  let closed = false;
  let pool: Promise<Pool> | undefined;
  let client: Client | undefined;
  let started = false;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let waiting: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  let active = false;

  async function loadPg() {
    return (await import('pg')).default;
  }

  function publisher(): Promise<Pool> {
    pool ??= loadPg().then((pg) => {
      const created = new pg.Pool({
        connectionString: options.connectionString,
        max: 2,
        connectionTimeoutMillis: 5000,
        idleTimeoutMillis: 10_000,
        fallback_application_name: 'countersign-events',
        allowExitOnIdle: true,
      });
      created.on('error', () => {});
      return created;
    });
    return pool;
  }

  function deliver(event: CountersignEvent): void {
    for (const listener of [...listeners]) {
      try {
        listener(structuredClone(event));
      } catch {
        // A broken listener must not stop the others.
      }
    }
  }

  function scheduleReconnect(attempt: number): void {
    if (closed || reconnectTimer !== undefined) return;
    const pause = Math.min(maxBackoff, baseBackoff * 2 ** attempt) * (0.75 + Math.random() * 0.5);
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      void connect(attempt + 1);
    }, pause);
    // A reconnect in waiting must not keep an otherwise finished process alive.
    reconnectTimer.unref();
  }

  async function connect(attempt: number): Promise<void> {
    if (closed) return;
    const pg = await loadPg();
    const next = new pg.Client({
      connectionString: options.connectionString,
      connectionTimeoutMillis: 5000,
      fallback_application_name: 'countersign-events',
      // TCP keepalive finds a peer that vanished without closing the connection.
      keepAlive: true,
    });
    // Until LISTEN has succeeded a failure is handled by the catch below, with its own backoff.
    let ready = false;
    let lost = false;
    const onLost = () => {
      if (!ready || lost) return;
      lost = true;
      if (client === next) {
        client = undefined;
        active = false;
      }
      next.end().catch(() => undefined);
      scheduleReconnect(0);
    };
    next.on('error', onLost);
    next.on('end', onLost);
    next.on('notification', (message) => {
      if (message.channel !== channel) return;
      const event = decodeNotification(message.payload);
      if (event !== null) deliver(event);
    });
    try {
      await next.connect();
      await next.query(`LISTEN "${channel}"`);
    } catch {
      // Not awaited: ending a client whose connect failed must not hold up the retry.
      void next.end().catch(() => undefined);
      scheduleReconnect(attempt);
      return;
    }
    if (closed) {
      await next.end().catch(() => undefined);
      return;
    }
    client = next;
    ready = true;
    active = true;
    const resolved = waiting;
    waiting = [];
    for (const { resolve } of resolved) resolve();
  }

  function start(): void {
    if (started || closed) return;
    started = true;
    void connect(0);
  }

  return {
    channel,

    async publish(event: CountersignEvent) {
      if (closed) throw new Error('The PostgreSQL event bus is closed.');
      const payload = encodeNotification(event);
      try {
        await (await publisher()).query('SELECT pg_notify($1, $2)', [channel, payload]);
      } catch (error) {
        // pool.query closes a connection that failed under it; the next publish opens another.
        throw new StoreUnavailableError(
          `The event could not be published on PostgreSQL channel ${channel} (PostgreSQL: ${(error as Error).message}).`,
          {
            hint: 'Events are notifications, not the record: the change itself is in the store. Check that PostgreSQL is running and reachable.',
            cause: error,
          },
        );
      }
    },

    subscribe(listener: EventListener) {
      listeners.add(listener);
      start();
      return () => {
        listeners.delete(listener);
      };
    },

    listening() {
      if (closed) return Promise.reject(new Error('The PostgreSQL event bus is closed.'));
      start();
      if (active) return Promise.resolve();
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
    },

    async close() {
      if (closed) return;
      closed = true;
      listeners.clear();
      if (reconnectTimer !== undefined) clearTimeout(reconnectTimer);
      reconnectTimer = undefined;
      const current = client;
      client = undefined;
      active = false;
      for (const { reject } of waiting.splice(0)) reject(new Error('The PostgreSQL event bus is closed.'));
      if (current !== undefined) {
        current.removeAllListeners('end');
        current.removeAllListeners('error');
        current.on('error', () => {});
        await current.end().catch(() => undefined);
      }
      if (pool !== undefined) await (await pool).end();
    },
  };
}
