import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type DeliveredEventType, deliveryId } from '../../core/delivery-id.ts';
import { guardedLog } from '../../core/guarded-log.ts';
import type { JsonValue } from '../../core/json.ts';
import { createAuditFollower } from '../../events/audit-follower.ts';
import type { CountersignEvent, EventBus } from '../../events/event-bus.ts';
import { loggedEventsOf } from '../../events/from-audit.ts';
import { storeNow } from '../../liveness/store-clock.ts';
import type { Delivery, DeliveryOutcome, Outbox } from '../../store/ports/server/outbox.ts';
import type { Store } from '../../store/store.ts';
import { SIGNATURE_HEADER, signPayload } from './signature.ts';
import { standardWebhookHeaders, standardWebhookKey } from './standard-webhooks.ts';

export interface WebhookOptions {
  url: string;
  /** `whsec_<base64>` (Standard Webhooks) or any other string; see docs/server.md. */
  secret: string;
  /** Waits before each retry; one attempt plus one per entry. */
  retryDelaysMs?: number[];
  timeoutMs?: number;
  /** How often to look for due deliveries, e.g. ones other processes enqueued (default 1 s). */
  pollMs?: number;
  /**
   * How often to read the audit log for new requests and decisions when the bus has not
   * said so (default 1 s; 0: only when the bus wakes it).
   */
  followMs?: number;
  /**
   * How long a claimed delivery is held before another process may retry it (default timeout
   * + 30 s), on the store's clock like every outbox time (storeNow: PostgreSQL's server clock).
   */
  leaseMs?: number;
  log?: (line: string) => void;
  fetch?: typeof fetch;
}

export interface WebhookSender {
  /**
   * Resolves when nothing this sender enqueued or claimed is in flight or waiting for one of
   * its retries: every such delivery was delivered, given up on, or taken over by another
   * process (tests).
   */
  idle(): Promise<void>;
  /**
   * Stops the loop and aborts posts in flight; resolves once they have settled. A delivery
   * cut off this way is put back to be retried at once (or, if that write fails, its claim
   * lapses and it is retried later): at least once, under the same id.
   */
  stop(): Promise<void>;
}

/** Claims are not sent: they change often and say nothing a receiver acts on; the live inbox shows them. */
export type WebhookEventType = DeliveredEventType;

export interface WebhookPayload {
  /** The same on every retry and in every process: receivers deduplicate on it. */
  id: string;
  type: WebhookEventType;
  createdAt: string;
  data: CountersignEvent;
}

/** Where the webhooks' place in the audit log is kept, in the store's key/value state. */
export const CURSOR_NAMESPACE = 'countersign';
export const CURSOR_KEY = 'webhooks.cursor';
const CURSOR_SAVE_EVERY = 500;
const DEFAULT_FOLLOW_MS = 1_000;

const DEFAULT_DELAYS = [1_000, 5_000, 30_000, 120_000, 600_000];
const DEFAULT_POLL_MS = 1_000;
const DEFAULT_TIMEOUT_MS = 10_000;
/** Posts in flight at once per process. */
const MAX_IN_FLIGHT = 16;

/** Moved to core, where erasure finds a request's outbox rows by it; re-exported for existing imports. */
export { deliveryId };

/** The notice for an event, or null for events that are not sent as webhooks. */
export function webhookPayload(event: CountersignEvent): WebhookPayload | null {
  switch (event.type) {
    case 'approval.requested':
      return {
        id: deliveryId(event.type, event.approval.id),
        type: event.type,
        createdAt: event.at,
        data: event,
      };
    // Each fires once per request (the store's compare-and-set), so type and request make its id.
    case 'approval.decided':
    case 'request.reminder':
    case 'request.escalated':
    case 'request.expiring':
      return {
        id: deliveryId(event.type, event.requestId),
        type: event.type,
        createdAt: event.at,
        data: event,
      };
    default:
      return null;
  }
}

const retryable = (status: number) => status >= 500 || status === 408 || status === 429;

/**
 * Posts a signed JSON notice for every new request and every decision, through the store's
 * delivery outbox. The notices come from the audit log: a follower reads it from a cursor
 * kept in the store (`countersign` / `webhooks.cursor` in the key/value state), queues each
 * notice (one insert-if-absent write under its deterministic id), then moves the cursor, so
 * a restart resumes where the last process left off and an entry committed just before a
 * crash still becomes a notice. The bus only wakes the follower early. A loop claims due rows (every `pollMs`, and at once after an enqueue or when a retry
 * this process scheduled comes due), posts them, and records the outcome. Failures are
 * retried with growing waits while the receiver fails (network, timeout, 5xx, 408, 429) and
 * given up on other 4xx. Rows left by a process that stopped are picked up by the next pass
 * of any process sharing the store.
 *
 * Every outbox time (when a row is due, when a claim lapses, when a retry comes due) is on the
 * store's clock (storeNow: PostgreSQL's server clock), never this host's: the processes that
 * compare them may run on hosts whose clocks disagree, and a host a minute ahead would take
 * every claim a minute early (posting the same notice twice) while one a minute behind would
 * hold its own a minute past their term.
 */
export function startWebhooks(
  bus: EventBus,
  /**
   * The audit log the notices come from, the key/value state that keeps the cursor, and the
   * clock the outbox's times are on (its `liveness`; this host's clock without one).
   */
  store: Pick<Store, 'listAudit' | 'lastAuditSeq' | 'getState' | 'setState' | 'liveness'>,
  outbox: Outbox,
  options: WebhookOptions,
): WebhookSender {
  const delays = options.retryDelaysMs ?? DEFAULT_DELAYS;
  const log = guardedLog(options.log ?? ((line: string) => process.stderr.write(`${line}\n`)));
  const send = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const leaseMs = options.leaseMs ?? timeoutMs + 30_000;
  // First, so a malformed whsec_ secret stops the server at start, not at the first delivery.
  const standardKey = standardWebhookKey(options.secret);
  const owner = `webhooks:${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;
  const stopped = new AbortController();
  /** Now on the store's clock: what every `nextAtMs` and claim here is written and judged in. */
  const now = () => storeNow(store);

  /** Posts in flight (each ends with its outcome recorded). */
  const inFlight = new Set<Promise<void>>();
  /** Retries this process scheduled, by id: what `idle()` still waits for. */
  const retrying = new Map<string, ReturnType<typeof setTimeout>>();
  let passing: Promise<void> | null = null;
  let passAgain = false;
  let lastClaimError = '';

  async function deliver(row: Delivery): Promise<void> {
    const type = row.kind;
    const body = JSON.stringify(row.payload);
    const timestamp = Math.floor(Date.now() / 1000);
    let outcome: string;
    try {
      const response = await send(options.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'countersign-webhook/1',
          'countersign-event': type,
          'countersign-delivery': row.id,
          [SIGNATURE_HEADER]: signPayload(options.secret, body, timestamp),
          // The outbox row id: the same on every retry, so receivers deduplicate on webhook-id too.
          ...standardWebhookHeaders(standardKey, row.id, body, timestamp),
        },
        body,
        signal: AbortSignal.any([stopped.signal, AbortSignal.timeout(timeoutMs)]),
      });
      await response.body?.cancel().catch(() => undefined);
      if (response.ok) {
        await finish(row, async () => ({ status: 'delivered', at: new Date().toISOString() }));
        return;
      }
      outcome = `HTTP ${response.status}`;
      if (!retryable(response.status)) {
        log(`countersign: webhook ${row.id} (${type}) refused with ${outcome}; not retried.`);
        await finish(row, async () => ({ status: 'failed', at: new Date().toISOString(), error: outcome }));
        return;
      }
    } catch (error) {
      outcome = error instanceof Error ? error.message : String(error);
    }
    if (stopped.signal.aborted) {
      // Cut off by stop(): back in the queue, due now, for whichever process runs next.
      await finish(row, async () => ({
        status: 'retry',
        nextAtMs: await now(),
        error: 'interrupted by shutdown',
      }));
      return;
    }
    const delay = delays[row.attempts - 1];
    if (delay === undefined) {
      log(`countersign: webhook ${row.id} (${type}) failed ${row.attempts} times (${outcome}); giving up.`);
      await finish(row, async () => ({ status: 'failed', at: new Date().toISOString(), error: outcome }));
      return;
    }
    let nextAtMs = 0;
    const retried = await finish(row, async () => {
      nextAtMs = (await now()) + delay;
      return { status: 'retry', nextAtMs, error: outcome };
    });
    if (retried) scheduleRetry(row.id, nextAtMs, delay);
  }

  /**
   * A pass when this process's retry comes due (at `atMs` on the store's clock, in about
   * `inMs`), rather than at the next poll.
   */
  function scheduleRetry(id: string, atMs: number, inMs: number): void {
    if (stopped.signal.aborted) return;
    const timer = setTimeout(
      () => {
        // Timers may fire a millisecond early, and run on this host's clock, not the store's:
        // a pass before the row is due on the store's clock would find nothing.
        now().then(
          (nowMs) => {
            // Claimed by a pass meanwhile, or stopped: that pass cleared the entry.
            if (retrying.get(id) !== timer) return;
            if (nowMs < atMs) return scheduleRetry(id, atMs, atMs - nowMs);
            retrying.delete(id);
            kick();
          },
          () => {
            // The clock could not be read: the next poll looks again.
            if (retrying.get(id) === timer) retrying.delete(id);
          },
        );
      },
      Math.max(0, inMs),
    );
    retrying.set(id, timer);
  }

  /**
   * Records an outcome (made at the last moment: a retry's time is read from the store's
   * clock); false when the claim was lost (it lapsed and another process took the row), or
   * when it could not be recorded.
   */
  async function finish(row: Delivery, outcome: () => Promise<DeliveryOutcome>): Promise<boolean> {
    try {
      return await outbox.finishDelivery(row.id, owner, await outcome());
    } catch (error) {
      // The claim lapses and the row is retried later: at least once, under the same id.
      log(`countersign: webhook ${row.id}: could not record its outcome (${(error as Error).message}).`);
      return false;
    }
  }

  /** Claims what is due, as long as there is room, and starts posting it. */
  async function pass(): Promise<void> {
    do {
      passAgain = false;
      const room = MAX_IN_FLIGHT - inFlight.size;
      if (stopped.signal.aborted || room <= 0) return;
      let rows: Delivery[];
      try {
        rows = await outbox.claimDeliveries({ nowMs: await now(), limit: room, leaseMs, owner });
        lastClaimError = '';
      } catch (error) {
        const message = (error as Error).message;
        if (message !== lastClaimError) log(`countersign: webhooks could not read the outbox: ${message}`);
        lastClaimError = message;
        return;
      }
      for (const row of rows) {
        const timer = retrying.get(row.id);
        if (timer !== undefined) clearTimeout(timer);
        retrying.delete(row.id);
        const delivery = deliver(row).finally(() => {
          inFlight.delete(delivery);
          kick();
        });
        inFlight.add(delivery);
      }
      if (rows.length === room) passAgain = true;
    } while (passAgain);
  }

  function kick(): void {
    if (stopped.signal.aborted) return;
    if (passing !== null) {
      passAgain = true;
      return;
    }
    passing = pass().finally(() => {
      passing = null;
      if (passAgain) kick();
    });
  }

  const poll = setInterval(kick, pollMs);
  poll.unref();
  // Rows a previous process left undelivered.
  kick();

  // The outbox is filled from the audit log, not from the bus: a decision's entry commits
  // with the decision, and the cursor below only moves past it once its notice is queued, so
  // a process that dies in between leaves the entry to the next one (at least once; the
  // outbox's insert-if-absent on the deterministic id makes it one row).
  let savedAt: number | null = null;
  let lastFollowError = '';
  const readStartingPoint = () =>
    Promise.all([store.getState(CURSOR_NAMESPACE, CURSOR_KEY), store.lastAuditSeq()] as const);
  // Read as the sender starts, not at the follower's first pass: "from now" is the moment
  // the server was started with webhooks (memory and SQLite read it synchronously here).
  let startingPoint: ReturnType<typeof readStartingPoint> | null = readStartingPoint();
  startingPoint.catch(() => undefined);
  const follower = createAuditFollower({
    log: store,
    from: async () => {
      const read = startingPoint ?? readStartingPoint();
      startingPoint = null;
      const [stored, head] = await read;
      // Webhooks newly configured: notices start from now, not from the whole history.
      const valid = typeof stored === 'number' && Number.isSafeInteger(stored) && stored >= 0;
      if (!valid) await store.setState(CURSOR_NAMESPACE, CURSOR_KEY, head);
      savedAt = valid ? stored : head;
      return savedAt;
    },
    deliver: async (entries) => {
      let queued = 0;
      // Due at once: now on the store's clock, which the claims judge it by.
      const dueNow = await now();
      for (const { event } of loggedEventsOf(entries)) {
        const payload = webhookPayload(event);
        if (payload === null) continue;
        const created = await outbox.enqueueDelivery({
          id: payload.id,
          kind: payload.type,
          // An event is plain JSON: it is what /v1/events streams as `data`.
          payload: payload as unknown as JsonValue,
          createdAt: payload.createdAt,
          nextAtMs: dueNow,
        });
        if (created) queued += 1;
      }
      if (queued > 0) kick();
      const last = entries.at(-1)!.seq;
      // Saved after every page that queued something; otherwise now and then, since reading
      // a few hundred entries again after a restart costs less than a write per page.
      if (queued > 0 || savedAt === null || last - savedAt >= CURSOR_SAVE_EVERY) {
        await store.setState(CURSOR_NAMESPACE, CURSOR_KEY, last);
        savedAt = last;
      }
    },
    wake: bus,
    pollMs: options.followMs ?? DEFAULT_FOLLOW_MS,
    onError: (error) => {
      const message = (error as Error).message;
      if (message !== lastFollowError)
        log(`countersign: webhooks could not follow the audit log: ${message}`);
      lastFollowError = message;
    },
  });
  follower.poke();

  return {
    async idle() {
      // Everything committed so far is in the outbox first.
      await follower.catchUp();
      for (;;) {
        if (passing !== null) await passing;
        else if (inFlight.size > 0) await Promise.all([...inFlight]);
        else if (retrying.size > 0 && !stopped.signal.aborted)
          await new Promise((resolve) => setTimeout(resolve, 5));
        else return;
      }
    },
    async stop() {
      await follower.stop();
      clearInterval(poll);
      stopped.abort();
      for (const timer of retrying.values()) clearTimeout(timer);
      retrying.clear();
      if (passing !== null) await passing;
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}
