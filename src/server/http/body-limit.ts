import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

/**
 * Refuses request bodies over `maxBytes`. A request that states its Content-Length is judged
 * by the header alone and its body is left untouched for the route to read straight from the
 * socket (see readBodyText); only a chunked body, whose size is unknown up front, goes
 * through Hono's bodyLimit, which buffers it under the cap. Hono's middleware on its own
 * turns every request, GETs included, into a full web Request with a stream over the socket:
 * a measurable share of the server's CPU per decision.
 */
export function limitBody(maxBytes: number, tooLarge: () => never): MiddlewareHandler {
  const buffered = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    const length = c.req.header('content-length');
    if (length !== undefined && c.req.header('transfer-encoding') === undefined) {
      if (!/^\d+$/.test(length) || Number(length) > maxBytes) tooLarge();
      return next();
    }
    return buffered(c, next);
  };
}
