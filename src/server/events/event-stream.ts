import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { CountersignEvent, EventBus } from '../../events/event-bus.ts';

export function sessionOf(event: CountersignEvent): string {
  return event.type === 'approval.requested' ? event.approval.session : event.session;
}

/** Open streams, so shutting the server down can end them instead of waiting forever. */
export type StreamRegistry = Set<() => void>;

/**
 * Server-Sent Events from the bus. Events are notifications, not the record: a client that
 * missed some (it was offline, the stream dropped) re-reads the store on reconnect.
 */
export function eventStream(
  c: Context,
  bus: EventBus,
  streams: StreamRegistry,
  options: {
    filter?: (event: CountersignEvent) => boolean;
    /** What is sent; the chat page gets less than an approver does. */
    shape?: (event: CountersignEvent) => object;
    keepAliveMs?: number;
  } = {},
): Response {
  c.header('cache-control', 'no-store');
  c.header('x-accel-buffering', 'no');
  return streamSSE(c, async (stream) => {
    let queue: Promise<void> = Promise.resolve();
    const send = (write: () => Promise<void>) => {
      queue = queue.then(write).catch(() => undefined);
    };
    const unsubscribe = bus.subscribe((event) => {
      if (options.filter && !options.filter(event)) return;
      const data = JSON.stringify(options.shape ? options.shape(event) : event);
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
