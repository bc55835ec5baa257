import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { verifySignature } from '../../src/index.ts';
import { signPayload } from '../../src/server/webhooks/signature.ts';
import { standardWebhookHeaders, standardWebhookKey } from '../../src/server/webhooks/standard-webhooks.ts';
import { CURSOR_KEY, CURSOR_NAMESPACE, deliveryId } from '../../src/server/webhooks/webhook-sender.ts';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { raiseCancel, testServer } from './helpers.ts';
import { type Received, receiver, verifyStandard } from './webhook-receiver.ts';

/** Both signatures of a delivery hold: countersign's header and Standard Webhooks'. */
function expectSigned(secret: string, delivery: Received): void {
  expect(verifySignature(secret, delivery.body, delivery.headers['countersign-signature'] as string)).toBe(
    true,
  );
  expect(verifyStandard(secret, delivery)).toEqual(JSON.parse(delivery.body));
  expect(delivery.headers['webhook-id']).toBe(delivery.headers['countersign-delivery']);
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('webhooks', () => {
  it('signs t.body with HMAC-SHA256 and checks the age', () => {
    const header = signPayload('s3cret', '{"a":1}', 1_700_000_000);
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
    expect(verifySignature('s3cret', '{"a":1}', header, { nowSeconds: 1_700_000_100 })).toBe(true);
    expect(verifySignature('s3cret', '{"a":2}', header, { nowSeconds: 1_700_000_100 })).toBe(false);
    expect(verifySignature('other', '{"a":1}', header, { nowSeconds: 1_700_000_100 })).toBe(false);
    expect(verifySignature('s3cret', '{"a":1}', header, { nowSeconds: 1_700_001_000 })).toBe(false);
  });

  it('signs the Standard Webhooks way too: the reference signer computes the same header', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const body = '{"a":1}';
    const headers = standardWebhookHeaders(standardWebhookKey(secret), 'evt_1', body, 1_700_000_000);
    expect(headers).toEqual({
      'webhook-id': 'evt_1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': new Webhook(secret).sign('evt_1', new Date(1_700_000_000_000), body),
    });
    // A plain secret is its own bytes, as `{ format: 'raw' }` receivers read it.
    expect(standardWebhookHeaders(standardWebhookKey('s3cret'), 'evt_1', body, 1)['webhook-signature']).toBe(
      new Webhook('s3cret', { format: 'raw' }).sign('evt_1', new Date(1_000), body),
    );
  });

  it('a whsec_ secret: the standardwebhooks verifier accepts each delivery; a wrong secret or an edited body does not', async () => {
    const hook = await receiver(1);
    closers.push(hook.close);
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const server = testServer({ webhook: { url: hook.url, secret, retryDelaysMs: [20] } });
    closers.push(() => server.close());
    const id = await raiseCancel(server);
    await server.webhooksIdle();
    expect(hook.received).toHaveLength(2);
    // Countersign-Signature keys HMAC with the whole string, as Stripe's verifier does.
    for (const delivery of hook.received) expectSigned(secret, delivery);
    // The refused attempt and its retry: one delivery, one webhook-id, each signed afresh.
    expect(new Set(hook.received.map((r) => r.headers['webhook-id']))).toEqual(
      new Set([deliveryId('approval.requested', id)]),
    );
    const [first] = hook.received;
    const other = `whsec_${randomBytes(32).toString('base64')}`;
    expect(() => verifyStandard(other, first!)).toThrow(WebhookVerificationError);
    expect(() => verifyStandard(secret, { ...first!, body: first!.body.replace('1044', '1045') })).toThrow(
      WebhookVerificationError,
    );
    const replayed = { ...first!, headers: { ...first!.headers, 'webhook-id': 'evt_other' } };
    expect(() => verifyStandard(secret, replayed)).toThrow(WebhookVerificationError);
  });

  it('a whsec_ secret that is not 24-64 bytes of base64 stops the server at start', () => {
    for (const secret of ['whsec_not base64!', `whsec_${Buffer.alloc(8).toString('base64')}`, 'whsec_'])
      expect(() => testServer({ webhook: { url: 'http://127.0.0.1:9/hook', secret } }), secret).toThrow(
        /starts with whsec_ but is not 24 to 64 bytes in base64/,
      );
  });

  it('posts signed notices for a new request and for its decision, retrying while the receiver fails', async () => {
    const hook = await receiver(2);
    closers.push(hook.close);
    const server = testServer({
      webhook: { url: hook.url, secret: 'whsec-test', retryDelaysMs: [20, 40, 80] },
    });
    closers.push(() => server.close());
    const id = await raiseCancel(server);
    await server.webhooksIdle();
    // Two refusals, then the same delivery again, signed afresh.
    expect(hook.received).toHaveLength(3);
    const deliveries = new Set(hook.received.map((r) => r.headers['countersign-delivery']));
    // Derived from the event, so every instance (and every restart) computes the same id.
    expect([...deliveries]).toEqual([deliveryId('approval.requested', id)]);
    expect(await server.outbox.getDelivery(deliveryId('approval.requested', id))).toMatchObject({
      status: 'delivered',
      attempts: 3,
    });
    for (const delivery of hook.received) expectSigned('whsec-test', delivery);
    const requested = JSON.parse(hook.received[2]!.body);
    expect(requested).toMatchObject({
      type: 'approval.requested',
      data: { approval: { id, tool: 'cancel_order', args: { orderId: 1044 } } },
    });

    await server.call('POST', `/v1/approvals/${id}/decision`, { as: 'alice', body: { approved: true } });
    await server.webhooksIdle();
    const decided = JSON.parse(hook.received.at(-1)!.body);
    expect(decided).toMatchObject({
      type: 'approval.decided',
      data: { requestId: id, verdict: 'approved', by: 'alice' },
    });
    for (const delivery of hook.received) expectSigned('whsec-test', delivery);
    expect(hook.received.at(-1)!.headers['countersign-event']).toBe('approval.decided');
    expect(hook.received.at(-1)!.headers['countersign-delivery']).toBe(deliveryId('approval.decided', id));
    expect(JSON.parse(hook.received.at(-1)!.body).id).toBe(deliveryId('approval.decided', id));
  });

  it('a 4xx other than 408 and 429 is recorded failed and never retried', async () => {
    const hook = await receiver(100, 422);
    closers.push(hook.close);
    const lines: string[] = [];
    const server = testServer({
      webhook: { url: hook.url, secret: 'whsec-test', retryDelaysMs: [10, 10, 10], pollMs: 10 },
      log: (line) => lines.push(line),
    });
    closers.push(() => server.close());
    const id = await raiseCancel(server);
    await server.webhooksIdle();
    const delivery = deliveryId('approval.requested', id);
    expect(await server.outbox.getDelivery(delivery)).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastError: 'HTTP 422',
      claimedBy: null,
    });
    // Several polls later, still the one attempt.
    await new Promise((resolve) => setTimeout(resolve, 150));
    await server.webhooksIdle();
    expect(hook.received).toHaveLength(1);
    expectSigned('whsec-test', hook.received[0]!);
    expect(lines.join('\n')).toContain(
      `webhook ${delivery} (approval.requested) refused with HTTP 422; not retried.`,
    );
  });

  it('408 and 429 are retried like a 5xx', async () => {
    for (const status of [408, 429]) {
      const hook = await receiver(1, status);
      closers.push(hook.close);
      const server = testServer({ webhook: { url: hook.url, secret: 'whsec-test', retryDelaysMs: [10] } });
      closers.push(() => server.close());
      await raiseCancel(server);
      await server.webhooksIdle();
      expect(hook.received, `HTTP ${status}`).toHaveLength(2);
      for (const delivery of hook.received) expectSigned('whsec-test', delivery);
    }
  });

  it('a delivery still being retried survives a restart: the next server on the file delivers it once, same id', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'countersign-webhooks-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, 'store.db');
    const failing = await receiver(100);
    closers.push(failing.close);
    const accepting = await receiver(0);
    closers.push(accepting.close);

    // The first server: its receiver answers 503, and the retry is due in 1.5 s.
    const firstStore = createSqliteStore({ path });
    const first = testServer({
      store: firstStore,
      webhook: { url: failing.url, secret: 'whsec-test', retryDelaysMs: [1_500, 1_500] },
    });
    const id = await raiseCancel(first);
    const delivery = deliveryId('approval.requested', id);
    await vi.waitFor(
      async () => {
        expect(await firstStore.getDelivery(delivery)).toMatchObject({
          status: 'pending',
          attempts: 1,
          claimedBy: null,
          lastError: 'HTTP 503',
        });
      },
      { timeout: 5_000, interval: 10 },
    );
    // Stopped before the retry: the old sender kept it in memory and lost it here.
    await first.close();
    await firstStore.close();
    expect(failing.received).toHaveLength(1);

    const secondStore = createSqliteStore({ path });
    const second = testServer({
      store: secondStore,
      webhook: { url: accepting.url, secret: 'whsec-second', retryDelaysMs: [1_500], pollMs: 50 },
    });
    closers.push(async () => {
      await second.close();
      await secondStore.close();
    });
    await vi.waitFor(() => expect(accepting.received).toHaveLength(1), { timeout: 5_000, interval: 20 });
    await vi.waitFor(
      async () => expect(await secondStore.getDelivery(delivery)).toMatchObject({ status: 'delivered' }),
      { timeout: 2_000, interval: 10 },
    );
    // Several more polls: delivered means never sent again.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await second.webhooksIdle();
    expect(accepting.received).toHaveLength(1);
    expect(failing.received).toHaveLength(1);
    const [got] = accepting.received;
    expect(got!.headers['countersign-delivery']).toBe(delivery);
    expect(failing.received[0]!.headers['countersign-delivery']).toBe(delivery);
    expectSigned('whsec-second', got!);
    expectSigned('whsec-test', failing.received[0]!);
    expect(got!.headers['webhook-id']).toBe(failing.received[0]!.headers['webhook-id']);
    expect(JSON.parse(got!.body)).toMatchObject({
      id: delivery,
      type: 'approval.requested',
      data: { approval: { id, tool: 'cancel_order', args: { orderId: 1044 } } },
    });
    expect(await secondStore.getDelivery(delivery)).toMatchObject({ status: 'delivered', attempts: 2 });
  });

  it('webhooks configured on a store with history start from its head; the cursor is kept in the store', async () => {
    const store = createMemoryStore();
    const before = testServer({ store });
    const old = await raiseCancel(before, 'old');
    await before.close();
    const hook = await receiver(0);
    closers.push(hook.close);
    const server = testServer({ store, webhook: { url: hook.url, secret: 'whsec-test' } });
    closers.push(() => server.close());
    const fresh = await raiseCancel(server, 'new');
    await server.webhooksIdle();
    expect(hook.received.map((r) => r.headers['webhook-id'])).toEqual([
      deliveryId('approval.requested', fresh),
    ]);
    expect(await store.getDelivery(deliveryId('approval.requested', old))).toBeNull();
    expect(await store.getState(CURSOR_NAMESPACE, CURSOR_KEY)).toBe(await store.lastAuditSeq());
  });

  it('gives up after the last retry and says so', async () => {
    const hook = await receiver(100);
    closers.push(hook.close);
    const lines: string[] = [];
    const server = testServer({
      webhook: { url: hook.url, secret: 'whsec-test', retryDelaysMs: [10, 10] },
      log: (line) => lines.push(line),
    });
    closers.push(() => server.close());
    await raiseCancel(server);
    await server.webhooksIdle();
    expect(hook.received).toHaveLength(3);
    for (const delivery of hook.received) expectSigned('whsec-test', delivery);
    expect(lines.join('\n')).toMatch(/failed 3 times \(HTTP 503\); giving up/);
  });
});
