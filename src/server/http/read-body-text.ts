import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';

/**
 * The request body as text. On @hono/node-server, a body with a Content-Length (already
 * checked against the limit by limitBody) is read straight from the socket, skipping the
 * web Request and stream that `c.req.text()` would build for it; anything else — a chunked
 * body buffered by the limit, or a request made without sockets (`app.request()`) — is read
 * through Hono.
 */
export async function readBodyText(c: Context): Promise<string> {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const direct =
    incoming !== undefined &&
    !incoming.readableDidRead &&
    c.req.header('content-length') !== undefined &&
    c.req.header('transfer-encoding') === undefined;
  if (!direct) return c.req.text();
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
