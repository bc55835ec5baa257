import { randomBytes } from 'node:crypto';
import type { CountersignEvent, EventBus } from '../../events/event-bus.ts';
import { SIGNATURE_HEADER, signPayload } from './signature.ts';

export interface WebhookOptions {
  url: string;
  secret: string;
  /** Waits before each retry; one attempt plus one per entry. */
  retryDelaysMs?: number[];
  timeoutMs?: number;
  log?: (line: string) => void;
  fetch?: typeof fetch;
}

export interface WebhookSender {
  /** Resolves when no delivery is in flight (tests). */
  idle(): Promise<void>;
  stop(): void;
}

export interface WebhookPayload {
  /** Stable across retries: receivers deduplicate on it. */
  id: string;
  type: 'approval.requested' | 'approval.decided';
  createdAt: string;
  data: CountersignEvent;
}

const DEFAULT_DELAYS = [1_000, 5_000, 30_000, 120_000, 600_000];
const MAX_IN_FLIGHT = 1000;

/**
 * Posts a signed JSON notice for every new request and every decision. Deliveries are
 * retried with growing waits while the receiver fails (5xx, 408, 429, network), and given
 * up on other 4xx. They live in memory: a restart drops what was still being retried, and
 * the receiver can always re-read the API.
 */
export function startWebhooks(bus: EventBus, options: WebhookOptions): WebhookSender {
  const delays = options.retryDelaysMs ?? DEFAULT_DELAYS;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const send = options.fetch ?? fetch;
  const stopped = new AbortController();
  const inFlight = new Set<Promise<void>>();
  // The same event can reach the bus twice (the store watcher and the run that raised it).
  const seen = new Set<string>();

  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      stopped.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });

  const deliver = async (payload: WebhookPayload): Promise<void> => {
    const body = JSON.stringify(payload);
    for (let attempt = 0; attempt <= delays.length; attempt++) {
      if (stopped.signal.aborted) return;
      let outcome: string;
      try {
        const response = await send(options.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'countersign-webhook/1',
            'countersign-event': payload.type,
            'countersign-delivery': payload.id,
            [SIGNATURE_HEADER]: signPayload(options.secret, body, Math.floor(Date.now() / 1000)),
          },
          body,
          signal: AbortSignal.any([stopped.signal, AbortSignal.timeout(options.timeoutMs ?? 10_000)]),
        });
        await response.body?.cancel().catch(() => undefined);
        if (response.ok) return;
        outcome = `HTTP ${response.status}`;
        const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
        if (!retryable) {
          log(`countersign: webhook ${payload.id} (${payload.type}) refused with ${outcome}; not retried.`);
          return;
        }
      } catch (error) {
        outcome = error instanceof Error ? error.message : String(error);
      }
      const delay = delays[attempt];
      if (delay === undefined) {
        log(
          `countersign: webhook ${payload.id} (${payload.type}) failed ${attempt + 1} times (${outcome}); giving up.`,
        );
        return;
      }
      await wait(delay);
    }
  };

  const unsubscribe = bus.subscribe((event) => {
    if (event.type !== 'approval.requested' && event.type !== 'approval.decided') return;
    const requestId = event.type === 'approval.requested' ? event.approval.id : event.requestId;
    const key = `${event.type}:${requestId}`;
    if (seen.has(key)) return;
    if (seen.size > 10_000) seen.clear();
    seen.add(key);
    if (inFlight.size >= MAX_IN_FLIGHT) {
      log(`countersign: webhook for ${key} dropped: ${MAX_IN_FLIGHT} deliveries already waiting.`);
      return;
    }
    const payload: WebhookPayload = {
      id: `evt_${randomBytes(12).toString('hex')}`,
      type: event.type,
      createdAt: event.at,
      data: event,
    };
    const delivery = deliver(payload).finally(() => inFlight.delete(delivery));
    inFlight.add(delivery);
  });

  return {
    async idle() {
      while (inFlight.size > 0) await Promise.all([...inFlight]);
    },
    stop() {
      unsubscribe();
      stopped.abort();
    },
  };
}
