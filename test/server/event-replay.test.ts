import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { REPLAY_LIMIT } from '../../src/server/events/live-feed.ts';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { raiseCancel, type TestServer, testServer, tokens } from './helpers.ts';

interface Frame {
  event: string;
  id: string | null;
  data: string;
}

interface OpenStream {
  frames: Frame[];
  /** The id the client would send back as Last-Event-ID: the last `id:` line seen. */
  lastEventId(): string | null;
  close(): Promise<void>;
}

/** Parses SSE as EventSource does, enough for these frames: event, id, data, blank line. */
function parser(onFrame: (frame: Frame) => void, onId: (id: string) => void) {
  let rest = '';
  return (chunk: string) => {
    rest += chunk;
    let end = rest.indexOf('\n\n');
    while (end !== -1) {
      const block = rest.slice(0, end);
      rest = rest.slice(end + 2);
      const frame: Frame = { event: 'message', id: null, data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const at = line.indexOf(': ');
        const [field, value] = at === -1 ? [line, ''] : [line.slice(0, at), line.slice(at + 2)];
        if (field === 'event') frame.event = value;
        if (field === 'data') frame.data = value;
        if (field === 'id') {
          frame.id = value;
          onId(value);
        }
      }
      if (frame.data !== '') onFrame(frame);
      end = rest.indexOf('\n\n');
    }
  };
}

describe('SSE ids and replay after Last-Event-ID, over HTTP on loopback', () => {
  let running: RunningServer | undefined;
  let server: TestServer;
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  async function listen(): Promise<void> {
    server = testServer();
    running = await startServer(server, { host: '127.0.0.1', port: 0 });
  }

  function open(path: string, lastEventId?: string): Promise<OpenStream> {
    return new Promise((resolve, reject) => {
      const frames: Frame[] = [];
      let last: string | null = null;
      const headers: Record<string, string> = { authorization: `Bearer ${tokens.alice}` };
      if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
      const req = request(`${running!.url}${path}`, { headers }, (res) => {
        const closed = new Promise<void>((done) => res.on('close', done));
        res.setEncoding('utf8');
        res.on(
          'data',
          parser(
            (frame) => {
              frames.push(frame);
              if (frame.event === 'ready')
                resolve({
                  frames,
                  lastEventId: () => last,
                  close: async () => {
                    req.destroy();
                    await closed;
                  },
                });
            },
            (id) => {
              last = id;
            },
          ),
        );
      });
      req.on('error', reject);
      req.end();
    });
  }

  async function until(check: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 5000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  const named = (stream: OpenStream) => stream.frames.map((frame) => frame.event);

  it('every frame carries the seq of its audit entry; a reconnect with Last-Event-ID gets what it missed, in order, then live ones', async () => {
    await listen();
    const first = await open('/v1/events');
    expect(first.frames[0]).toMatchObject({ event: 'ready', id: '0' });
    const id = await raiseCancel(server, 's1');
    await until(() => named(first).includes('turn.finished'), 'the first turn');
    const requested = first.frames.find((frame) => frame.event === 'approval.requested')!;
    const entries = (await server.call('GET', '/v1/audit', { as: 'alice' })).json as Array<{
      seq: number;
      kind: string;
    }>;
    expect(Number(requested.id)).toBe(entries.find((entry) => entry.kind === 'request.raised')!.seq);
    for (const frame of first.frames) expect(frame.id, frame.event).toMatch(/^\d+$/);
    const left = first.lastEventId()!;
    await first.close();

    // While the client is away: a decision (and its execution), and a new request in s2.
    await server.call('POST', `/v1/approvals/${id}/decision`, { as: 'alice', body: { approved: true } });
    const second = await raiseCancel(server, 's2');

    const back = await open('/v1/events', left);
    await until(() => named(back).filter((name) => name !== 'ready').length >= 3, 'the replay');
    const replayed = back.frames.filter((frame) => frame.event !== 'ready');
    expect(
      replayed
        .slice(0, 3)
        .map((frame) => [
          frame.event,
          JSON.parse(frame.data).requestId ?? JSON.parse(frame.data).approval?.id,
        ]),
    ).toEqual([
      ['approval.decided', id],
      ['execution.finished', id],
      ['approval.requested', second],
    ]);
    const ids = replayed.map((frame) => Number(frame.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(Math.min(...ids)).toBeGreaterThan(Number(left));
    // The replay gives entries, not turns: turn.finished is live only.
    expect(named(back)).not.toContain('turn.finished');

    // Then live ones, after the replayed ones.
    await raiseCancel(server, 's3');
    await until(
      () => named(back).filter((name) => name === 'approval.requested').length === 2,
      'the live request',
    );
    expect(named(back).filter((name) => name === 'approval.decided')).toHaveLength(1);
    await back.close();
  });

  it('a session filter replays only that session', async () => {
    server = testServer();
    running = await startServer(server, { host: '127.0.0.1', port: 0 });
    const start = await open('/v1/events?session=s2');
    const left = start.lastEventId()!;
    await start.close();
    await raiseCancel(server, 's1');
    const mine = await raiseCancel(server, 's2');
    const back = await open('/v1/events?session=s2', left);
    await until(() => named(back).includes('approval.requested'), 'the s2 request');
    expect(
      back.frames
        .filter((frame) => frame.event !== 'ready')
        .map((frame) => JSON.parse(frame.data).approval.id),
    ).toEqual([mine]);
    await back.close();
  });

  it(`a client more than ${REPLAY_LIMIT} entries behind is told to reload, then streams live`, async () => {
    await listen();
    const first = await open('/v1/events');
    const left = first.lastEventId()!;
    await first.close();
    const filler = Array.from({ length: REPLAY_LIMIT + 1 }, () => ({
      kind: 'call.logged' as const,
      session: 'busy',
      requestId: null,
      actor: 'test',
      data: { tool: 'add_to_cart', args: '{}', resultHash: 'x' },
    }));
    await server.store.appendAudit(filler, new Date().toISOString());
    const back = await open('/v1/events', left);
    await until(() => named(back).includes('reload'), 'the reload event');
    const reload = back.frames.find((frame) => frame.event === 'reload')!;
    expect(Number(reload.id)).toBe(await server.store.lastAuditSeq());
    expect(JSON.parse(reload.data)).toMatchObject({ reason: expect.stringContaining('re-read') });
    await raiseCancel(server, 's9');
    await until(() => named(back).includes('approval.requested'), 'a live event after the reload');
    expect(Number(back.frames.at(-1)!.id)).toBeGreaterThan(Number(reload.id));
    await back.close();
  });

  it('a cursor this log never reached (another store, a reset) is told to reload; garbage is no cursor', async () => {
    await listen();
    const ahead = await open('/v1/events', '999999');
    await until(() => named(ahead).includes('reload'), 'the reload event');
    await ahead.close();
    const garbage = await open('/v1/events', 'abc');
    expect(garbage.frames).toMatchObject([{ event: 'ready', id: '0' }]);
    await garbage.close();
  });

  it('GET /v1/audit reads by cursor too: afterSeq and limit, a bad cursor is 400', async () => {
    server = testServer();
    const id = await raiseCancel(server, 's1');
    await server.call('POST', `/v1/approvals/${id}/decision`, { as: 'alice', body: { approved: true } });
    const all = (await server.call('GET', '/v1/audit', { as: 'alice' })).json as Array<{ seq: number }>;
    expect(all.length).toBeGreaterThan(2);
    const page = await server.call('GET', '/v1/audit?afterSeq=1&limit=2', { as: 'alice' });
    expect(page.json.map((entry: { seq: number }) => entry.seq)).toEqual([2, 3]);
    expect(page.headers.get('link')).toBe('</v1/audit?afterSeq=3&limit=2>; rel="next"');
    const tail = await server.call('GET', `/v1/audit?afterSeq=${all.length - 1}&limit=2`, { as: 'alice' });
    expect(tail.json).toHaveLength(1);
    expect(tail.headers.get('link')).toBeNull();
    const bad = await server.call('GET', '/v1/audit?afterSeq=-1', { as: 'alice' });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('INVALID_INPUT');
    expect((await server.call('GET', '/v1/audit?limit=0', { as: 'alice' })).status).toBe(400);
  });
});
