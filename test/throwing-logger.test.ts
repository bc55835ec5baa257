import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startWorkerSweep } from '../src/cli/worker-stalled-sweep.ts';
import { startTakeoverWatch } from '../src/cli/worker-takeover.ts';
import { createMemoryEventBus } from '../src/events/memory/memory-event-bus.ts';
import type { ContinuationQueue } from '../src/queue/continuation-queue.ts';
import { schedulePurge } from '../src/server/retention-schedule.ts';
import { startWebhooks } from '../src/server/webhooks/webhook-sender.ts';
import { createMemoryOutbox } from '../src/store/memory/memory-outbox.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';
import type { Store } from '../src/store/store.ts';

/*
 * The periodic loops log from their catch blocks. A logger that throws there (a closed
 * stream) must not end a loop, nor reject a promise nobody waits for: Node ends the process
 * on an unhandled rejection (vitest reports it and fails the run).
 */
const throwing = () => {
  throw new Error('the log is closed');
};

const stops: Array<() => Promise<void>> = [];
const unhandled: unknown[] = [];
const noteUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', noteUnhandled);
});
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
  await new Promise((resolve) => setImmediate(resolve));
  process.off('unhandledRejection', noteUnhandled);
  expect(unhandled).toEqual([]);
});

const queue: ContinuationQueue = {
  enqueue: async () => undefined,
  work: async () => undefined,
  close: async () => undefined,
  inHand: async () => [],
};

/** Resolves once `count()` reached `n`; fails after two seconds. */
async function reaches(count: () => number, n: number): Promise<void> {
  await expect.poll(count, { timeout: 2000, interval: 5 }).toBeGreaterThanOrEqual(n);
}

describe('a logger that throws stops no periodic loop', () => {
  it('the webhook outbox: a claim that failed is tried again, and what is due is posted', async () => {
    const store = createMemoryStore();
    const outbox = createMemoryOutbox();
    let claims = 0;
    const posted: string[] = [];
    const sender = startWebhooks(
      createMemoryEventBus(),
      store,
      {
        ...outbox,
        claimDeliveries: async (query) => {
          claims += 1;
          if (claims <= 2) throw new Error(`the outbox is down (${claims})`);
          return outbox.claimDeliveries(query);
        },
      },
      {
        url: 'http://127.0.0.1:9/hook',
        secret: 'whsec-test',
        pollMs: 5,
        followMs: 5,
        log: throwing,
        fetch: async (_url, init) => {
          posted.push(new Headers(init?.headers).get('countersign-delivery') ?? '');
          return new Response(null, { status: 204 });
        },
      },
    );
    stops.push(() => sender.stop());
    await outbox.enqueueDelivery({
      id: 'dlv_1',
      kind: 'approval.requested',
      payload: {},
      createdAt: new Date().toISOString(),
      nextAtMs: 0,
    });
    await reaches(() => posted.length, 1);
    expect(posted).toEqual(['dlv_1']);
  });

  it("the worker's stalled sweep", async () => {
    let sweeps = 0;
    const store = {
      listStalledSessions: async () => {
        sweeps += 1;
        throw new Error('connection reset');
      },
    } as unknown as Store;
    const sweep = startWorkerSweep({ store, queue, agents: ['a'], intervalMs: 5, log: throwing });
    stops.push(() => sweep.stop());
    await reaches(() => sweeps, 3);
  });

  it("the worker's takeover watch", async () => {
    let looks = 0;
    const failing: ContinuationQueue = {
      ...queue,
      inHand: async () => {
        looks += 1;
        throw new Error('connection reset');
      },
    };
    const watch = startTakeoverWatch({
      store: { getLease: async () => null, liveness: undefined } as unknown as Pick<
        Store,
        'getLease' | 'liveness'
      >,
      queue: failing,
      intervalMs: 5,
      log: throwing,
    });
    stops.push(() => watch.stop());
    await reaches(() => looks, 3);
  });

  it("serve's retention purge", async () => {
    let passes = 0;
    const store = {
      purgeBatch: async () => {
        passes += 1;
        throw new Error('connection reset');
      },
    } as unknown as Store;
    const schedule = schedulePurge({
      store,
      policy: { audit: 1000 },
      intervalMs: 5,
      now: () => new Date(),
      log: throwing,
    });
    stops.push(() => schedule.stop());
    await reaches(() => passes, 3);
  });
});
