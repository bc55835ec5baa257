import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context } from 'hono';
import { stream as honoStream } from 'hono/streaming';
import type { CountersignEvent } from '../../events/event-bus.ts';
import type { LoggedEvent } from '../../events/from-audit.ts';
import { securityHeaders } from '../http/security-headers.ts';
import type { LiveFeed } from './live-feed.ts';
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

/** Every open inbox gets the same event object from the feed: serialize it once for all of them. */
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
 * Where a reconnecting client left off: the `Last-Event-ID` header its EventSource sends by
 * itself, or `?after=` for a first connection that knows where it stands (a page rendered at
 * a known seq). Anything but a whole number is no cursor: the stream starts from now.
 */
export function resumeCursor(c: Context): number | null {
  const raw = c.req.header('last-event-id') ?? c.req.query('after');
  if (raw === undefined || !/^\d{1,15}$/.test(raw.trim())) return null;
  return Number(raw.trim());
}

/**
 * Server-Sent Events from the audit log (live-feed.ts). Every frame carries `id: <seq>`, the
 * seq of the audit entry it comes from, so a client that reconnects with `Last-Event-ID` is
 * sent every event after it, in order, then live ones; a client more than REPLAY_LIMIT
 * entries behind gets one `reload` event instead and re-reads the store. Keep-alives carry
 * the id too (`id:` with no data moves the client's cursor without an event), so a filtered
 * stream's cursor keeps up with entries it does not show.
 * On @hono/node-server the frames go straight to the socket; elsewhere (`app.request()`)
 * through Hono's stream helper.
 */
export async function eventStream(
  c: Context,
  feed: LiveFeed,
  streams: StreamRegistry,
  options: EventStreamOptions = {},
): Promise<Response> {
  await feed.start();
  const after = resumeCursor(c);
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (outgoing !== undefined) return directStream(c, outgoing, feed, streams, after, options);
  c.header('content-type', 'text/event-stream');
  c.header('cache-control', 'no-store');
  c.header('x-accel-buffering', 'no');
  return honoStream(c, async (stream) => {
    let queue: Promise<void> = Promise.resolve();
    const send = (frame: string) => {
      queue = queue.then(() => stream.write(frame).then(() => undefined)).catch(() => undefined);
    };
    let end: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    streams.add(end);
    stream.onAbort(end);
    const leave = await follow(feed, after, send, options);
    try {
      await ended;
    } finally {
      leave();
      streams.delete(end);
    }
  });
}

async function directStream(
  c: Context,
  outgoing: ServerResponse,
  feed: LiveFeed,
  streams: StreamRegistry,
  after: number | null,
  options: EventStreamOptions,
): Promise<Response> {
  // Not read back from `c.res`: touching it would make Hono wrap the already-sent marker
  // in a response of its own, which @hono/node-server then tries to send.
  outgoing.writeHead(200, {
    ...securityHeaders(c.req.path),
    'content-type': 'text/event-stream',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  // A client that stops reading is cut off rather than buffered without bound.
  const writer = createSseWriter(outgoing, () => outgoing.destroy());
  let leave: () => void = () => undefined;
  let gone = false;
  const end = () => {
    gone = true;
    leave();
    streams.delete(end);
    writer.close();
  };
  streams.add(end);
  outgoing.once('close', end);
  const left = await follow(feed, after, (frame) => writer.send(frame), options);
  if (gone) left();
  else leave = left;
  return RESPONSE_ALREADY_SENT;
}

/**
 * Joins the feed: `ready`, then the replay after `after` (if any), then live events, each
 * sent once in seq order. Live events arriving during the replay wait in a buffer; those the
 * replay already covered are dropped. Returns the function that leaves.
 */
async function follow(
  feed: LiveFeed,
  after: number | null,
  send: (frame: string) => void,
  options: EventStreamOptions,
): Promise<() => void> {
  let buffer: LoggedEvent[] | null = [];
  // The seq up to which this client has every event it is shown: what its id says.
  let cursor = after ?? feed.position ?? 0;
  const pass = (logged: LoggedEvent) => {
    const { seq, event } = logged;
    // turn.finished is not in the log: it is never replayed, so never a duplicate.
    if (event.type !== 'turn.finished') {
      if (seq <= cursor) return;
      cursor = seq;
    } else cursor = Math.max(cursor, seq);
    if (options.filter && !options.filter(event)) return;
    send(sseFrame(event.type, payload(event, options.shape), cursor));
  };
  const unsubscribe = feed.subscribe((logged) => {
    if (buffer !== null) buffer.push(logged);
    else pass(logged);
  });
  send(sseFrame('ready', '{}', cursor, 3000));
  if (after !== null) {
    try {
      const replay = await feed.replay(after);
      if (replay.kind === 'reload') {
        cursor = Math.max(replay.head, feed.position ?? 0);
        send(
          sseFrame(
            'reload',
            JSON.stringify({
              reason: 'More happened since this stream was last connected than it replays; re-read.',
            }),
            cursor,
          ),
        );
      } else for (const logged of replay.events) pass(logged);
    } catch {
      // The store could not be read: the client re-reads on its own when it sees `reload`.
      cursor = feed.position ?? cursor;
      send(
        sseFrame(
          'reload',
          JSON.stringify({ reason: 'The missed events could not be read; re-read.' }),
          cursor,
        ),
      );
    }
  }
  const waiting = buffer;
  buffer = null;
  for (const logged of waiting) pass(logged);
  const ping = setInterval(() => send(`: keep-alive\nid: ${cursor}\n\n`), options.keepAliveMs ?? 15_000);
  ping.unref();
  return () => {
    clearInterval(ping);
    unsubscribe();
  };
}
