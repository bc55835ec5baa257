import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { raiseCancel, type TestServer, testServer, tokens } from './helpers.ts';

interface OpenStream {
  status: number;
  headers: Record<string, unknown>;
  /** Everything received so far. */
  text(): string;
  ended: Promise<void>;
  close(): void;
}

/**
 * Live event streams over a real socket, where frames are written straight to Node's
 * response (the in-process tests go through Hono's streamSSE instead).
 */
describe('live events over HTTP on loopback', () => {
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

  function open(path: string): Promise<OpenStream> {
    return new Promise((resolve, reject) => {
      const req = request(
        `${running!.url}${path}`,
        { headers: { authorization: `Bearer ${tokens.alice}` } },
        (res) => {
          let text = '';
          let ended!: () => void;
          const done = new Promise<void>((r) => {
            ended = r;
          });
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
            if (text.includes('event: ready'))
              resolve({
                status: res.statusCode ?? 0,
                headers: res.headers,
                text: () => text,
                ended: done,
                close: () => req.destroy(),
              });
          });
          res.on('end', ended);
          res.on('close', ended);
        },
      );
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

  it('every open stream gets each event once; a session filter gets only its session', async () => {
    await listen();
    const all = await Promise.all([open('/v1/events'), open('/v1/events'), open('/v1/events')]);
    const onlyS2 = await open('/v1/events?session=s2');
    expect(all[0]!.status).toBe(200);
    expect(all[0]!.headers['content-type']).toBe('text/event-stream');
    expect(all[0]!.headers['cache-control']).toBe('no-store');
    expect(all[0]!.headers['x-content-type-options']).toBe('nosniff');

    const id = await raiseCancel(server, 's1');
    const decided = await server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(decided.status).toBe(200);
    for (const stream of all)
      await until(() => stream.text().includes('event: turn.finished'), 'turn.finished');
    for (const stream of all) {
      const text = stream.text();
      expect(text.split('event: approval.requested').length - 1).toBe(1);
      expect(text.split('event: approval.decided').length - 1).toBe(1);
      expect(text).toContain(`"requestId":"${id}"`);
    }
    await raiseCancel(server, 's2');
    await until(() => onlyS2.text().includes('event: approval.requested'), 'the s2 request');
    expect(onlyS2.text()).not.toContain('"session":"s1"');
  });

  it('stopping the server ends the open streams instead of waiting for them', async () => {
    await listen();
    const stream = await open('/v1/events');
    await running!.close();
    running = undefined;
    await expect(stream.ended).resolves.toBeUndefined();
  });

  it('a client that went away is unsubscribed from the live feed', async () => {
    await listen();
    const base = server.feed.listeners;
    const stream = await open('/v1/events');
    expect(server.feed.listeners).toBe(base + 1);
    stream.close();
    await stream.ended;
    await until(() => server.feed.listeners === base, 'the subscription to end');
  });
});
