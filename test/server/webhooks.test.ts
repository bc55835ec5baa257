import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { signPayload, verifySignature } from '../../src/server/webhooks/signature.ts';
import { raiseCancel, testServer } from './helpers.ts';

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A receiver on loopback that fails its first `failures` deliveries with 503. */
async function receiver(failures: number) {
  const received: Received[] = [];
  let left = failures;
  const http = createHttpServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      received.push({ headers: request.headers, body });
      if (left > 0) {
        left--;
        response.writeHead(503).end();
      } else response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    close: () => new Promise<void>((resolve) => http.close(() => resolve())),
  };
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
    expect(deliveries.size).toBe(1);
    for (const { body, headers } of hook.received) {
      expect(verifySignature('whsec-test', body, headers['countersign-signature'] as string)).toBe(true);
    }
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
    expect(hook.received.at(-1)!.headers['countersign-event']).toBe('approval.decided');
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
    expect(lines.join('\n')).toMatch(/failed 3 times \(HTTP 503\); giving up/);
  });
});
