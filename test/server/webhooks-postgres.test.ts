import { afterAll, describe, expect, it, vi } from 'vitest';
import type { CountersignEvent } from '../../src/events/event-bus.ts';
import { createPostgresEventBus } from '../../src/events/postgres/postgres-event-bus.ts';
import { verifySignature } from '../../src/index.ts';
import { deliveryId } from '../../src/server/webhooks/webhook-sender.ts';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL } from '../helpers/postgres.ts';
import { raiseCancel, type TestServer, testServer } from './helpers.ts';
import { receiver, verifyStandard } from './webhook-receiver.ts';

const pg = await postgresForTests();

/**
 * Two server instances on one PostgreSQL schema, sharing events over LISTEN/NOTIFY as
 * `countersign serve` does, with one webhook receiver: each instance hears every event and
 * enqueues it, but the outbox keeps one row per event and only one instance claims it.
 */
describe.skipIf(pg === null)('webhooks: two instances on one PostgreSQL schema', () => {
  const schema = freshSchema('webhooks');
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await dropSchema(schema);
  });

  async function instance(url: string): Promise<{ server: TestServer; seen: CountersignEvent[] }> {
    const connectionString = pg ?? TEST_PG_URL;
    const store: PostgresStore = await createPostgresStore({ connectionString, schema });
    const events = createPostgresEventBus({ connectionString, channel: `cs_${schema}`.slice(0, 63) });
    const server = testServer({
      store,
      events,
      webhook: { url, secret: 'whsec-shared', retryDelaysMs: [50, 50], pollMs: 20 },
    });
    const seen: CountersignEvent[] = [];
    events.subscribe((event) => seen.push(event));
    closers.push(async () => {
      await server.close();
      await events.close();
      await store.close();
    });
    return { server, seen };
  }

  it('a request and its decision reach the receiver once each, not once per instance', async () => {
    // The first attempt fails, so the retry is claimed again by whichever instance polls first.
    const hook = await receiver(1);
    closers.push(hook.close);
    const a = await instance(hook.url);
    const b = await instance(hook.url);

    const id = await raiseCancel(a.server, 'pg-hook-1');
    const decided = await a.server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(decided.status).toBe(200);

    // Both instances heard both events (B only over NOTIFY).
    for (const { seen } of [a, b])
      await vi.waitFor(
        () => {
          expect(seen.some((e) => e.type === 'approval.requested')).toBe(true);
          expect(seen.some((e) => e.type === 'approval.decided')).toBe(true);
        },
        { timeout: 5_000, interval: 10 },
      );
    const requested = deliveryId('approval.requested', id);
    const decision = deliveryId('approval.decided', id);
    await vi.waitFor(
      async () => {
        for (const delivery of [requested, decision])
          expect(await a.server.outbox.getDelivery(delivery)).toMatchObject({ status: 'delivered' });
      },
      { timeout: 5_000, interval: 20 },
    );
    // Plenty of polls by both instances after that: nothing more is sent.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await Promise.all([a.server.webhooksIdle(), b.server.webhooksIdle()]);

    const accepted = hook.received.slice(1);
    const byType = (type: string) => accepted.filter((r) => r.headers['countersign-event'] === type);
    expect(byType('approval.requested')).toHaveLength(1);
    expect(byType('approval.decided')).toHaveLength(1);
    expect(hook.received).toHaveLength(3);
    // Deliveries have no order (docs/server.md): with two instances the decision can be
    // attempted first, so the failed first attempt is either row, and its retry carries its id.
    const failed = hook.received[0]!.headers['countersign-delivery'];
    expect([requested, decision]).toContain(failed);
    expect(accepted.filter((r) => r.headers['countersign-delivery'] === failed)).toHaveLength(1);
    expect(byType('approval.requested')[0]!.headers['countersign-delivery']).toBe(requested);
    expect(byType('approval.decided')[0]!.headers['countersign-delivery']).toBe(decision);
    for (const delivery of hook.received) {
      expect(
        verifySignature('whsec-shared', delivery.body, delivery.headers['countersign-signature'] as string),
      ).toBe(true);
      // The reference Standard Webhooks verifier; webhook-id is the outbox row id on every attempt.
      expect(verifyStandard('whsec-shared', delivery)).toEqual(JSON.parse(delivery.body));
      expect(delivery.headers['webhook-id']).toBe(delivery.headers['countersign-delivery']);
    }
    expect(hook.received[0]!.headers['webhook-id']).toBe(failed);
  });
});
