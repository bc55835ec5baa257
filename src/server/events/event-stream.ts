import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { CountersignEvent, EventBus } from '../../events/event-bus.ts';
import { securityHeaders } from '../http/security-headers.ts';
import { createSseWriter, sseFrame } from './sse-writer.ts';

export function sessionOf(event: CountersignEvent): string {
  return event.type === 'approval.requested' ? event.approval.session : event.session;
}

/** Open streams, so shutting the server down can end them instead of waiting forever. */
export type StreamRegistry = Set<() => void>;

export interface EventStreamOptions {
  filter?: (event: CountersignEvent) => boolean;
  /** What is sent; the chat page gets less than an approver does. */
  shape?: (event: CountersignEvent) => object;
  keepAliveMs?: number;
}

/** Every open inbox gets the same event object from the bus: serialize it once for all of them. */
const serialized = new WeakMap<CountersignEvent, string>();

function payload(event: CountersignEvent, shape: EventStreamOptions['shape']): string {
  if (shape) return JSON.stringify(shape(event));
  let text = serialized.get(event);
  if (text === undefined) {
    text = JSON.stringify(event);
    serialized.set(event, text);
  }
  return text;
}

/**
 * Server-Sent Events from the bus. Events are notifications, not the record: a client that
 * missed some (it was offline, the stream dropped) re-reads the store on reconnect.
 * On @hono/node-server the frames go straight to the socket; elsewhere (`app.request()`)
 * through Hono's streamSSE.
 */
export function eventStream(
  c: Context,
  bus: EventBus,
  streams: StreamRegistry,
  options: EventStreamOptions = {},
): Response {
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (outgoing !== undefined) return directStream(c, outgoing, bus, streams, options);
  c.header('cache-control', 'no-store');
  c.header('x-accel-buffering', 'no');
  return streamSSE(c, async (stream) => {
    let queue: Promise<void> = Promise.resolve();
    const send = (write: () => Promise<void>) => {
      queue = queue.then(write).catch(() => undefined);
    };
    const unsubscribe = bus.subscribe((event) => {
      if (options.filter && !options.filter(event)) return;
      const data = payload(event, options.shape);
      send(() => stream.writeSSE({ event: event.type, data }));
    });
    const ping = setInterval(
      () =>
        send(async () => {
          await stream.write(': keep-alive\n\n');
        }),
      options.keepAliveMs ?? 15_000,
    );
    let end: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    streams.add(end);
    stream.onAbort(end);
    try {
      await stream.writeSSE({ event: 'ready', data: '{}', retry: 3000 });
      await ended;
    } finally {
      clearInterval(ping);
      unsubscribe();
      streams.delete(end);
    }
  });
}

function directStream(
  c: Context,
  outgoing: ServerResponse,
  bus: EventBus,
  streams: StreamRegistry,
  options: EventStreamOptions,
): Response {
  // Not read back from `c.res`: touching it would make Hono wrap the already-sent marker
  // in a response of its own, which @hono/node-server then tries to send.
  outgoing.writeHead(200, {
    ...securityHeaders(c.req.path),
    'content-type': 'text/event-stream',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  let unsubscribe: () => void = () => undefined;
  let ping: NodeJS.Timeout | undefined;
  const end = () => {
    clearInterval(ping);
    unsubscribe();
    streams.delete(end);
    writer.close();
  };
  // A client that stops reading is cut off rather than buffered without bound.
  const writer = createSseWriter(outgoing, () => outgoing.destroy());
  writer.send(`event: ready\ndata: {}\nretry: 3000\n\n`);
  unsubscribe = bus.subscribe((event) => {
    if (options.filter && !options.filter(event)) return;
    writer.send(sseFrame(event.type, payload(event, options.shape)));
  });
  ping = setInterval(() => writer.send(': keep-alive\n\n'), options.keepAliveMs ?? 15_000);
  streams.add(end);
  outgoing.once('close', end);
  return RESPONSE_ALREADY_SENT;
}
