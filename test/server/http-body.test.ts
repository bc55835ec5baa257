import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { raiseCancel, type TestServer, testServer, tokens } from './helpers.ts';

/**
 * Request bodies over a real socket. The in-process tests (`app.request()`) never reach the
 * path that reads a body straight from the socket, nor a chunked body of unknown size.
 */
describe('request bodies over HTTP on loopback', () => {
  let running: RunningServer | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  async function listen(maxBodyBytes = 1024): Promise<{ server: TestServer; port: number }> {
    const server = testServer({ maxBodyBytes });
    running = await startServer(server, { host: '127.0.0.1', port: 0 });
    return { server, port: running.port };
  }

  /** Posts `chunks` as the body; with `chunked` there is no Content-Length. */
  function post(
    port: number,
    path: string,
    chunks: string[],
    chunked: boolean,
  ): Promise<{
    status: number;
    json: { error?: { code: string }; status?: string };
    headers: Record<string, unknown>;
  }> {
    return new Promise((resolve, reject) => {
      const body = chunks.join('');
      const headers: Record<string, string> = {
        authorization: `Bearer ${tokens.alice}`,
        'content-type': 'application/json',
      };
      if (!chunked) headers['content-length'] = String(Buffer.byteLength(body));
      const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (part) => {
          text += part;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(text), headers: res.headers }),
        );
      });
      req.on('error', reject);
      for (const chunk of chunks) req.write(chunk);
      req.end();
    });
  }

  async function status(server: TestServer, id: string): Promise<string> {
    return (await server.call('GET', `/v1/approvals/${id}`, { as: 'alice' })).json.status;
  }

  it('reads a decision sent with a Content-Length, and one sent in chunks', async () => {
    const { server, port } = await listen();
    const first = await raiseCancel(server, 's1');
    const plain = await post(port, `/v1/approvals/${first}/decision`, ['{"approved":true}'], false);
    expect(plain.status).toBe(200);
    expect(plain.json.status).toBe('completed');
    expect(plain.headers['x-content-type-options']).toBe('nosniff');
    expect(await status(server, first)).toBe('approved');

    const second = await raiseCancel(server, 's2');
    const chunked = await post(
      port,
      `/v1/approvals/${second}/decision`,
      ['{"approved":', 'false,', '"reason":"no"}'],
      true,
    );
    expect(chunked.status).toBe(200);
    expect(await status(server, second)).toBe('rejected');
  });

  it('refuses a body over the limit, stated or chunked, and decides nothing', async () => {
    const { server, port } = await listen(256);
    const id = await raiseCancel(server);
    const big = JSON.stringify({ approved: true, reason: 'x'.repeat(400) });
    const stated = await post(port, `/v1/approvals/${id}/decision`, [big], false);
    expect(stated.status).toBe(413);
    expect(stated.json.error?.code).toBe('PAYLOAD_TOO_LARGE');
    const chunked = await post(
      port,
      `/v1/approvals/${id}/decision`,
      [big.slice(0, 200), big.slice(200)],
      true,
    );
    expect(chunked.status).toBe(413);
    expect(chunked.json.error?.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await status(server, id)).toBe('pending');
  });

  it('a malformed body read from the socket is INVALID_INPUT, and the request still waits', async () => {
    const { server, port } = await listen();
    const id = await raiseCancel(server);
    const broken = await post(port, `/v1/approvals/${id}/decision`, ['{"approved": tru'], false);
    expect(broken.status).toBe(400);
    expect(broken.json.error?.code).toBe('INVALID_INPUT');
    expect(await status(server, id)).toBe('pending');
  });

  it('pages carry their security headers when served over a socket', async () => {
    await listen();
    const page = await fetch(`${running!.url}/login`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const missing = await fetch(`${running!.url}/v1/nothing`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
