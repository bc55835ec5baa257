import { createServer as createHttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deliveryId, type WebhookOptions } from '../../src/server/webhooks/webhook-sender.ts';
import type { Outbox } from '../../src/store/ports/server/outbox.ts';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL } from '../helpers/postgres.ts';
import { raiseCancel, type TestServer, testServer } from './helpers.ts';

const pg = await postgresForTests();

const HOUR = 3_600_000;
/** How long a delivery's claim holds: short, so its lapse is waited for, not faked. */
const LEASE = 1500;
/** How long after its claim lapsed a row may still wait: a poll, a round trip, a slow CI. */
const SLACK = 3000;
const SECRET = 'whsec-skewed-clocks';
/**
 * Each process reads the server's clock on its own (read once, carried forward), each to
 * within half a round trip: times two processes noted may disagree by this much, no more.
 */
const READINGS = 50;

const wall = Date.now.bind(Date);
/** This process's wall clock, `offsetMs` off from here on: a host whose clock is wrong. */
const skew = (offsetMs: number) => vi.spyOn(Date, 'now').mockImplementation(() => wall() + offsetMs);

/**
 * A webhook receiver on loopback that notes when each post arrives on the database server's
 * clock (`clock`), and answers the n-th with `answer(n)`: a status, or `hold` to keep it open.
 */
async function receiverOn(clock: () => Promise<number>, answer: (n: number) => number | 'hold') {
  const arrivals: Array<{ at: number; id: string }> = [];
  const held: ServerResponse[] = [];
  const http = createHttpServer((request, response) => {
    request.resume();
    request.on('end', () => {
      void clock().then((at) => {
        arrivals.push({ at, id: String(request.headers['countersign-delivery']) });
        const status = answer(arrivals.length);
        if (status === 'hold') held.push(response);
        else response.writeHead(status).end();
      });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/hook`,
    arrivals,
    close: async () => {
      for (const response of held) response.destroy();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** A server's outbox that queues what it is given but never claims: the row stays as written. */
function enqueueOnly(store: PostgresStore): Outbox {
  return {
    enqueueDelivery: (delivery) => store.enqueueDelivery(delivery),
    claimDeliveries: async () => [],
    finishDelivery: (id, owner, outcome) => store.finishDelivery(id, owner, outcome),
    getDelivery: (id) => store.getDelivery(id),
  };
}

/**
 * Server instances on one PostgreSQL schema, each with its webhook sender, on hosts whose
 * clocks disagree with the database server's by an hour each way (Date.now, what the sender
 * read before). Every outbox time is on the server's clock (storeNow), so a delivery's claim
 * lapses at the same moment for every host: one an hour ahead does not post it again while
 * its holder is still posting, one an hour behind is not kept from it for hours after its
 * term, and a new row or a retry is due when the server's clock says, not an hour off.
 */
describe.skipIf(pg === null)('webhook deliveries across hosts whose clocks disagree (PostgreSQL)', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** A schema of its own for one test (nothing another test left in its outbox), and its clock. */
  async function setup(label: string) {
    const schema = freshSchema(label);
    const probe = await createPostgresStore({ connectionString: pg ?? TEST_PG_URL, schema });
    closers.push(async () => {
      await probe.close();
      await dropSchema(schema);
    });
    const clock = () => probe.liveness.now();

    async function host(
      url: string,
      options: { webhook?: Partial<WebhookOptions>; outbox?: (store: PostgresStore) => Outbox } = {},
    ): Promise<{ server: TestServer; close: () => Promise<void> }> {
      const store = await createPostgresStore({ connectionString: pg ?? TEST_PG_URL, schema });
      const server = testServer({
        store,
        ...(options.outbox ? { outbox: options.outbox(store) } : {}),
        followMs: 20,
        webhook: { url, secret: SECRET, pollMs: 20, ...options.webhook },
      });
      let closed: Promise<void> | undefined;
      const close = () => {
        closed ??= (async () => {
          await server.close();
          await store.close();
        })();
        return closed;
      };
      closers.push(close);
      return { server, close };
    }

    return { probe, clock, host };
  }

  for (const [holderOff, takerOff, story] of [
    [-HOUR, +HOUR, 'a host an hour ahead does not take a claim early from one an hour behind'],
    [+HOUR, -HOUR, 'a host an hour behind takes a lapsed claim at its term, not hours later'],
  ] as const) {
    it(story, async () => {
      const { probe, clock, host } = await setup('hook_clock');
      // The first post is held open: its sender keeps the row claimed until the claim lapses.
      const hook = await receiverOn(clock, (n) => (n === 1 ? 'hold' : 204));
      closers.push(hook.close);
      const webhook = { leaseMs: LEASE, timeoutMs: 60_000, retryDelaysMs: [] };

      skew(holderOff);
      const holder = await host(hook.url, { webhook });
      const id = await raiseCancel(holder.server, `hook-${holderOff > 0 ? 'ahead' : 'behind'}`);
      const delivery = deliveryId('approval.requested', id);
      await vi.waitFor(() => expect(hook.arrivals).toHaveLength(1), { timeout: 5000, interval: 10 });
      const claimed = await probe.getDelivery(delivery);
      expect(claimed).toMatchObject({ status: 'pending', attempts: 1 });
      // The claim lapses LEASE after it was taken on the server's clock (just before the post).
      const lapse = claimed!.nextAtMs;
      expect(lapse - LEASE).toBeLessThanOrEqual(hook.arrivals[0]!.at + READINGS);
      expect(lapse - LEASE).toBeGreaterThan(hook.arrivals[0]!.at - 1000);

      // Another host, its clock two hours from the holder's: the row is posted again once the
      // claim lapsed (by it or by the holder's own next pass), not before and not much after.
      skew(takerOff);
      await host(hook.url, { webhook });
      await vi.waitFor(() => expect(hook.arrivals).toHaveLength(2), {
        timeout: LEASE + SLACK + 2000,
        interval: 10,
      });
      // Not while the first claim held, nor long after it lapsed.
      expect(hook.arrivals[1]!.at).toBeGreaterThanOrEqual(lapse - READINGS);
      expect(hook.arrivals[1]!.at - lapse).toBeLessThan(SLACK);
      expect(hook.arrivals.map((arrival) => arrival.id)).toEqual([delivery, delivery]);
      await vi.waitFor(
        async () =>
          expect(await probe.getDelivery(delivery)).toMatchObject({ status: 'delivered', attempts: 2 }),
        { timeout: 5000, interval: 20 },
      );
      // The second claim was taken on the server's clock too (just before the second post),
      // once the first had lapsed: LEASE or more after the first was taken.
      const second = (await probe.getDelivery(delivery))!.nextAtMs - LEASE;
      expect(second).toBeLessThanOrEqual(hook.arrivals[1]!.at + READINGS);
      expect(second).toBeGreaterThan(hook.arrivals[1]!.at - 1000);
      expect(second - (lapse - LEASE)).toBeGreaterThanOrEqual(LEASE);
    }, 20_000);
  }

  it('a new row and a retry are due by the server’s clock, an hour ahead or behind the host’s', async () => {
    const { probe, clock, host } = await setup('hook_clock_due');
    const hook = await receiverOn(clock, () => 503);
    closers.push(hook.close);
    for (const offset of [+HOUR, -HOUR]) {
      skew(offset);
      // A host that only queues: the row stays as its sender wrote it.
      const before = await clock();
      const writer = await host(hook.url, { outbox: enqueueOnly });
      const id = await raiseCancel(writer.server, `hook-new-${offset > 0 ? 'ahead' : 'behind'}`);
      const delivery = deliveryId('approval.requested', id);
      await vi.waitFor(async () => expect(await probe.getDelivery(delivery)).not.toBeNull(), {
        timeout: 5000,
        interval: 10,
      });
      const after = await clock();
      const queued = (await probe.getDelivery(delivery))!;
      expect(queued).toMatchObject({ status: 'pending', attempts: 0, claimedBy: null });
      expect(queued.nextAtMs).toBeGreaterThanOrEqual(before - READINGS);
      expect(queued.nextAtMs).toBeLessThanOrEqual(after + READINGS);
      await writer.close();

      // A host that posts it: refused with 503, retried a minute later on the server's clock.
      const posts = hook.arrivals.length;
      const sender = await host(hook.url, { webhook: { retryDelaysMs: [60_000] } });
      await vi.waitFor(
        async () =>
          expect(await probe.getDelivery(delivery)).toMatchObject({
            attempts: 1,
            claimedBy: null,
            lastError: 'HTTP 503',
          }),
        { timeout: 5000, interval: 10 },
      );
      const posted = hook.arrivals[posts]!;
      expect(posted.id).toBe(delivery);
      const retryAt = (await probe.getDelivery(delivery))!.nextAtMs;
      expect(retryAt - 60_000).toBeGreaterThanOrEqual(posted.at - READINGS);
      expect(retryAt - 60_000).toBeLessThanOrEqual((await clock()) + READINGS);
      await sender.close();
    }
  }, 30_000);
});
