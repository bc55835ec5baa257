import type { Hono } from 'hono';
import { eventStream, type StreamRegistry, sessionOf } from '../events/event-stream.ts';
import { queryText } from '../http/read-json.ts';
import { requireIdentity, type ServerContext, type ServerEnv } from '../server-context.ts';

export function eventRoutes(app: Hono<ServerEnv>, ctx: ServerContext, streams: StreamRegistry): void {
  app.get('/v1/events', (c) => {
    requireIdentity(c);
    const session = queryText(c, 'session');
    return eventStream(
      c,
      ctx.feed,
      streams,
      session ? { filter: (event) => sessionOf(event) === session } : {},
    );
  });
}
