import type { ServerResponse } from 'node:http';

/** Buffered output above which a client that does not read is cut off (it reconnects and re-reads). */
export const MAX_BUFFERED_BYTES = 1024 * 1024;

/**
 * How long frames gather before one socket write. A person does not see 20 ms; the server
 * does: with 20 inboxes open at 1,000 decisions/s, a write per event per inbox was an eighth
 * of its CPU in `writev` alone.
 */
export const SSE_FLUSH_MS = 20;

/**
 * Server-Sent Events written straight to Node's response, one socket write per
 * SSE_FLUSH_MS however many events arrived in it. Going through web streams instead (Hono's
 * streamSSE) cost about 45 µs per event per open inbox: with 20 inboxes open, more than the
 * decision itself.
 */
export function createSseWriter(
  response: ServerResponse,
  onOverflow: () => void,
): { send(frame: string): void; close(): void } {
  let pending = '';
  let scheduled = false;
  let closed = false;
  const flush = () => {
    scheduled = false;
    if (closed || pending === '') return;
    const chunk = pending;
    pending = '';
    response.write(chunk);
    if (response.writableLength > MAX_BUFFERED_BYTES) onOverflow();
  };
  return {
    send(frame) {
      if (closed) return;
      pending += frame;
      if (!scheduled) {
        scheduled = true;
        setTimeout(flush, SSE_FLUSH_MS).unref();
      }
    },
    close() {
      if (closed) return;
      flush();
      closed = true;
      response.end();
    },
  };
}

/**
 * One SSE frame; `data` is JSON, so it holds no newline. `id` is the audit seq the client has
 * every event up to (it comes back as `Last-Event-ID`); `retry` the reconnect delay in ms.
 */
export function sseFrame(event: string, data: string, id?: number, retry?: number): string {
  const idLine = id === undefined ? '' : `id: ${id}\n`;
  const retryLine = retry === undefined ? '' : `retry: ${retry}\n`;
  return `event: ${event}\n${idLine}data: ${data}\n${retryLine}\n`;
}
