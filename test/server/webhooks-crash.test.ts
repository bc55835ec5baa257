import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deliveryId } from '../../src/server/webhooks/webhook-sender.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { type ServeProcess, startServe } from '../helpers/serve-process.ts';
import { receiver, verifyStandard } from './webhook-receiver.ts';

const tokens = 'svc:service:svc-token-123456,ann:support+manager:ann-token-123456';
const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/**
 * The window the bus-fed sender left open: the decision commits, the process dies before its
 * notice is queued. The notice now comes from the audit entry that committed with the
 * decision, read by whichever server runs next from the webhooks' stored cursor.
 */
describe('webhooks survive a crash between a decision and its notice', () => {
  it('a server killed right after committing a decision: the next server on the store sends the notice', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'countersign-hook-crash-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    const hook = await receiver(0);
    closers.push(hook.close);
    const env = {
      COUNTERSIGN_STORE: `sqlite:${join(dir, 'store.db')}`,
      COUNTERSIGN_TOKENS: tokens,
      COUNTERSIGN_WEBHOOK_URL: hook.url,
      COUNTERSIGN_WEBHOOK_SECRET: secret,
    };
    const started: ServeProcess[] = [];
    closers.push(async () => {
      for (const child of started) await child.stop();
    });

    // The first server dies (SIGKILL) the moment a decision has committed.
    const first = await startServe({ ...env, COUNTERSIGN_TEST_FAULT: 'after-decision' });
    started.push(first);
    const posted = await fetch(`${first.base}/v1/sessions/crash-1/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer svc-token-123456', 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Please cancel my order 1044.', user: 'c-100' }),
    });
    expect(posted.status).toBe(200);
    const id = ((await posted.json()) as { approvals: Array<{ id: string }> }).approvals[0]!.id;
    await vi.waitFor(() => expect(hook.received).toHaveLength(1), { timeout: 10_000, interval: 20 });
    expect(hook.received[0]!.headers['webhook-id']).toBe(deliveryId('approval.requested', id));

    await expect(
      fetch(`${first.base}/v1/approvals/${id}/decision`, {
        method: 'POST',
        headers: { authorization: 'Bearer ann-token-123456', 'content-type': 'application/json' },
        body: JSON.stringify({ approved: true }),
      }),
    ).rejects.toThrow();
    expect(await first.exited).toMatchObject({ signal: 'SIGKILL' });

    // The decision is in the store and its audit entry in the log; its notice was never queued.
    const store = createSqliteStore({ path: join(dir, 'store.db') });
    try {
      expect(await store.getApproval(id)).toMatchObject({ status: 'approved', decision: { by: 'ann' } });
      expect((await store.listAudit()).map((entry) => entry.kind)).toContain('request.decided');
      expect(await store.getDelivery(deliveryId('approval.decided', id))).toBeNull();
    } finally {
      await store.close();
    }

    const second = await startServe(env);
    started.push(second);
    await vi.waitFor(() => expect(hook.received).toHaveLength(2), { timeout: 10_000, interval: 20 });
    const notice = hook.received[1]!;
    // The reference Standard Webhooks verifier accepts it as it arrived.
    expect(verifyStandard(secret, notice)).toMatchObject({
      id: deliveryId('approval.decided', id),
      type: 'approval.decided',
      data: { requestId: id, verdict: 'approved', by: 'ann', session: 'crash-1' },
    });
    expect(notice.headers['webhook-id']).toBe(deliveryId('approval.decided', id));
    // The request's own notice is not sent again: the cursor had moved past it.
    await second.stop();
    expect(hook.received).toHaveLength(2);
  });
});
