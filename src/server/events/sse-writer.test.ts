import type { ServerResponse } from 'node:http';
import { describe, expect, it, vi } from 'vitest';
import { createSseWriter, MAX_BUFFERED_BYTES, SSE_FLUSH_MS, sseFrame } from './sse-writer.ts';

/** Just enough of a ServerResponse: what was written, and how much is still buffered. */
function fakeResponse(buffered = 0) {
  const writes: string[] = [];
  let ended = false;
  const response = {
    write: (chunk: string) => {
      writes.push(chunk);
      return true;
    },
    end: () => {
      ended = true;
    },
    writableLength: buffered,
  };
  return { response: response as unknown as ServerResponse, writes, ended: () => ended };
}

describe('createSseWriter', () => {
  it('gathers the frames of one flush interval into one socket write', async () => {
    vi.useFakeTimers();
    try {
      const { response, writes } = fakeResponse();
      const writer = createSseWriter(response, () => undefined);
      writer.send(sseFrame('a', '1'));
      writer.send(sseFrame('b', '2'));
      expect(writes).toEqual([]);
      await vi.advanceTimersByTimeAsync(SSE_FLUSH_MS);
      expect(writes).toEqual(['event: a\ndata: 1\n\nevent: b\ndata: 2\n\n']);
      writer.send(sseFrame('c', '3'));
      await vi.advanceTimersByTimeAsync(SSE_FLUSH_MS);
      expect(writes).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('close() sends what is pending, ends the response, and ignores later frames', () => {
    const { response, writes, ended } = fakeResponse();
    const writer = createSseWriter(response, () => undefined);
    writer.send(sseFrame('last', '{}'));
    writer.close();
    writer.send(sseFrame('after', '{}'));
    expect(writes).toEqual(['event: last\ndata: {}\n\n']);
    expect(ended()).toBe(true);
  });

  it('cuts off a client whose unread output passes the cap', () => {
    const { response } = fakeResponse(MAX_BUFFERED_BYTES + 1);
    const overflow = vi.fn();
    const writer = createSseWriter(response, overflow);
    writer.send(sseFrame('x', '{}'));
    writer.close();
    expect(overflow).toHaveBeenCalledTimes(1);
  });
});
