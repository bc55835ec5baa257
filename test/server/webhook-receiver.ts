import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A receiver on loopback that fails its first `failures` deliveries with `status` (503). */
export async function receiver(failures: number, status = 503) {
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
        response.writeHead(status).end();
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

/**
 * Verifies a delivery as a Standard Webhooks receiver does, with the reference library: a
 * `whsec_` secret as it is, any other secret as its raw bytes. Returns the payload; throws
 * WebhookVerificationError when the signature, id or timestamp does not hold.
 */
export function verifyStandard(secret: string, { headers, body }: Received): unknown {
  const webhook = secret.startsWith('whsec_')
    ? new Webhook(secret)
    : new Webhook(new TextEncoder().encode(secret), { format: 'raw' });
  return webhook.verify(body, headers as Record<string, string>);
}
