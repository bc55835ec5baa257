import { afterAll, describe, expect, it, vi } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl, TEST_PG_URL } from '../helpers/postgres.ts';
import { type ServeProcess, startServe } from '../helpers/serve-process.ts';
import { writeTempApp } from '../helpers/temp-app.ts';
import { receiver, verifyStandard } from './webhook-receiver.ts';

const pg = await postgresForTests();

const SECRET = `whsec_${Buffer.from('nudges-two-instances-secret-32b!').toString('base64')}`;
const tokens = 'svc:service:svc-token-123456,ann:support:ann-token-123456,max:manager:max-token-123456';

/**
 * Two real `countersign serve` processes on one PostgreSQL schema, each with its own store
 * watcher and webhook sender, and one receiver: a payment whose tool reminds after 1 s,
 * escalates to managers after 2 s and warns 4 s before its 8 s expiry. Both watchers read the
 * same due rows every pass; the store's compare-and-set lets one of them fire each nudge, so
 * the trail holds one entry of each and the receiver gets one delivery of each. The test waits
 * for the expiry (which both watchers reach long after every nudge was due), not for a time.
 */
describe.skipIf(pg === null)('reminders and escalation across two serve instances on PostgreSQL', () => {
  const schema = freshSchema('nudges');
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await dropSchema(schema);
  });

  it('fire exactly once: one audit entry and one verified webhook delivery of each', async () => {
    const app = writeTempApp(
      'payments-app',
      `
const pay = defineTool({
  name: 'send_payment',
  description: 'Send a payment.',
  input: {
    type: 'object',
    properties: { to: { type: 'string' }, cents: { type: 'integer', minimum: 1 } },
    required: ['to', 'cents'],
    additionalProperties: false,
  },
  standing: false,
  ttl: '8s',
  remindAfter: '1s',
  escalateAfter: '2s',
  escalateTo: 'manager',
  warnBefore: '4s',
  execute: (args) => ({ ok: true, ...args }),
});

export const agents = [createAgent({ name: 'payments', instructions: 'You send payments.', tools: [pay] })];
`,
    );
    const hook = await receiver(0);
    closers.push(hook.close);
    const env = {
      COUNTERSIGN_STORE: storeUrl(schema),
      COUNTERSIGN_APP: app,
      COUNTERSIGN_TOKENS: tokens,
      COUNTERSIGN_WEBHOOK_URL: hook.url,
      COUNTERSIGN_WEBHOOK_SECRET: SECRET,
    };
    const instances: ServeProcess[] = [];
    for (let i = 0; i < 2; i++) {
      const child = await startServe(env);
      instances.push(child);
      closers.push(() => child.stop());
    }
    const [a, b] = instances as [ServeProcess, ServeProcess];
    const store: PostgresStore = await createPostgresStore({ connectionString: pg ?? TEST_PG_URL, schema });
    closers.push(() => store.close());

    const posted = await fetch(`${a.base}/v1/sessions/pay-1/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer svc-token-123456', 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'use send_payment with to bob cents 500', user: 'c-100' }),
    });
    expect(posted.status).toBe(200);
    const turn = (await posted.json()) as { approvals: Array<{ id: string }> };
    const id = turn.approvals[0]!.id;

    const entries = async (kind: string) =>
      (await store.listAudit()).filter((entry) => entry.requestId === id && entry.kind === kind);

    // The escalation, seen from the other instance: the row says managers may decide it now.
    await vi.waitFor(
      async () => {
        const seen = await fetch(`${b.base}/v1/requests/${id}`, {
          headers: { authorization: 'Bearer ann-token-123456' },
        });
        expect(await seen.json()).toMatchObject({ escalatedTo: 'manager' });
      },
      { timeout: 15_000, interval: 100 },
    );
    // Wait for the expiry: every nudge was due long before, and both watchers have passed it.
    await vi.waitFor(async () => expect(await entries('request.expired')).toHaveLength(1), {
      timeout: 20_000,
      interval: 100,
    });
    const types = ['request.reminder', 'request.escalated', 'request.expiring', 'approval.decided'];
    await vi.waitFor(
      () => {
        for (const type of types)
          expect(hook.received.filter((r) => r.headers['countersign-event'] === type).length, type).toBe(1);
      },
      { timeout: 15_000, interval: 50 },
    );

    expect(await entries('request.reminder')).toHaveLength(1);
    expect(await entries('request.expiring')).toHaveLength(1);
    const [escalated] = await entries('request.escalated');
    expect(escalated).toMatchObject({
      actor: 'countersign',
      data: { escalatedTo: 'manager', tool: 'send_payment' },
    });
    expect((await store.listAudit()).filter((e) => e.requestId === id).map((e) => e.kind)).toEqual([
      'request.raised',
      'request.reminder',
      'request.escalated',
      'request.expiring',
      'request.expired',
    ]);

    // Every delivery verifies with the reference Standard Webhooks library; none came twice.
    const ids = hook.received.map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(ids.length);
    const nudges = hook.received
      .map((delivery) => verifyStandard(SECRET, delivery) as { type: string; data: { requestId?: string } })
      .filter((payload) => payload.type.startsWith('request.'));
    // Each once; in no promised order: both instances wake when a nudge comes due and either
    // may claim the next delivery first (the audit log above holds the order).
    expect(nudges.map((payload) => [payload.type, payload.data.requestId]).sort()).toEqual([
      ['request.escalated', id],
      ['request.expiring', id],
      ['request.reminder', id],
    ]);
    expect(a.stderr() + b.stderr()).not.toContain('could not send reminders');
  });
});
