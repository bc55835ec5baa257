import { afterEach, describe, expect, it } from 'vitest';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { chatSecret } from '../helpers/chat-client.ts';
import { raiseCancel, type TestServer, testServer, tokens } from './helpers.ts';

/** The server on a loopback port, driven with fetch: what a browser or client really sends. */
interface Live {
  server: TestServer;
  url: string;
  fetch(path: string, init?: RequestInit): Promise<Response>;
  signIn(token?: string): Promise<{ cookie: string; csrf: string }>;
}

const running: RunningServer[] = [];
afterEach(async () => {
  for (const server of running.splice(0)) await server.close();
});

async function live(overrides: Parameters<typeof testServer>[0] = {}): Promise<Live> {
  const server = testServer({
    workflows: [refundWorkflow],
    checkpoints: createMemoryCheckpointStore(),
    ...overrides,
  });
  const http = await startServer(server, { host: '127.0.0.1', port: 0 });
  running.push(http);
  const fetchLive = (path: string, init: RequestInit = {}) =>
    fetch(`${http.url}${path}`, { redirect: 'manual', ...init });
  return {
    server,
    url: http.url,
    fetch: fetchLive,
    async signIn(token = tokens.alice) {
      const login = await fetchLive('/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, next: '/' }),
      });
      expect(login.status).toBe(303);
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      const inbox = await (await fetchLive('/', { headers: { cookie } })).text();
      const csrf = /name="csrf" value="([^"]+)"/.exec(inbox)![1]!;
      return { cookie, csrf };
    },
  };
}

function nested(depth: number, leaf = '1'): string {
  return `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`;
}

const hostileNexts = [
  '/\t/evil.example/x',
  '/\n/evil.example/x',
  '/\r\nSet-Cookie: x=1',
  '//evil.example/x',
  '/\\evil.example/x',
  '\\/evil.example',
  'https://evil.example/',
  'javascript:alert(1)',
  '/ /evil.example',
  '/\u0000/evil.example',
  '/\u007f/evil.example',
  '/\u20ac',
  '/approvals/x//evil.example',
  '',
];

describe('the web edge, over real HTTP on loopback', () => {
  it('after sign-in, `next` only ever leads to a path on this site, and never fails', async () => {
    const { fetch, signIn } = await live();
    const { cookie } = await signIn();
    for (const next of hostileNexts) {
      const query = `/login?next=${encodeURIComponent(next)}`;
      const already = await fetch(query, { headers: { cookie } });
      expect(already.status, JSON.stringify(next)).toBe(303);
      expect(already.headers.get('location'), JSON.stringify(next)).toBe('/');
      const form = await fetch(query);
      expect(form.status).toBe(200);
      expect(await form.text()).toContain('name="next" value="/"');
      const posted = await fetch('/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: tokens.alice, next }),
      });
      expect(posted.status, JSON.stringify(next)).toBe(303);
      expect(posted.headers.get('location'), JSON.stringify(next)).toBe('/');
    }
    // The exact URL from the report, percent-encoded as a browser sends it.
    const tab = await fetch('/login?next=/%09/evil.example/x', { headers: { cookie } });
    expect(tab.headers.get('location')).toBe('/');
    const lf = await fetch('/login?next=/%0a/evil.example/x', { headers: { cookie } });
    expect([lf.status, lf.headers.get('location')]).toEqual([303, '/']);
    // Our own paths survive, query and all.
    const own = await fetch(`/login?next=${encodeURIComponent('/approvals/apr_1?flash=a%20b')}`, {
      headers: { cookie },
    });
    expect(own.headers.get('location')).toBe('/approvals/apr_1?flash=a%20b');
  });

  it('a sign-out from another site (or without the form token) is refused and the person stays signed in', async () => {
    const { fetch, signIn } = await live();
    const { cookie, csrf } = await signIn();
    const attempts: RequestInit[] = [
      // What a cross-site form sends (were the cookie sent at all).
      { headers: { cookie, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } },
      { headers: { cookie, 'sec-fetch-site': 'cross-site' }, body: new URLSearchParams({ csrf }) },
      { headers: { cookie }, body: new URLSearchParams({}) },
      { headers: { cookie }, body: new URLSearchParams({ csrf: `${csrf}x` }) },
    ];
    for (const init of attempts) {
      const refused = await fetch('/logout', { method: 'POST', ...init });
      expect(refused.status).toBe(403);
      expect(refused.headers.get('set-cookie')).toBeNull();
      expect((await fetch('/', { headers: { cookie } })).status).toBe(200);
    }
    const anonymous = await fetch('/logout', { method: 'POST' });
    expect([anonymous.status, anonymous.headers.get('set-cookie')]).toEqual([303, null]);

    // An Origin naming another port of the same host is another site too.
    const otherPort = await fetch('/logout', {
      method: 'POST',
      headers: { cookie, origin: 'http://127.0.0.1:1' },
      body: new URLSearchParams({ csrf }),
    });
    expect(otherPort.status).toBe(403);
    const own = await fetch('/logout', {
      method: 'POST',
      headers: { cookie },
      body: new URLSearchParams({ csrf }),
    });
    expect(own.status).toBe(303);
    expect(own.headers.get('location')).toBe('/login');
    expect(own.headers.get('set-cookie')).toMatch(/countersign_session=;/);
    expect((await fetch('/', { headers: { cookie } })).status).toBe(303);
  });

  it('JSON nested past 64 levels is 400 INVALID_INPUT on every route that reads JSON, never 500', async () => {
    const { fetch, server } = await live();
    const id = await raiseCancel(server);
    const post = (path: string, body: string, as: keyof typeof tokens = 'mia') =>
      fetch(path, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens[as]}`, 'content-type': 'application/json' },
        body,
      });
    const expectTooDeep = async (response: Response) => {
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('INVALID_INPUT');
      expect(body.error.message).toContain('deeper than 64 levels');
    };
    // The decision's tolerated extras, 30,000 deep (the report's case), and just past the limit.
    await expectTooDeep(
      await post(`/v1/approvals/${id}/decision`, `{"approved":true,"x":${nested(30_000)}}`),
    );
    await expectTooDeep(await post(`/v1/approvals/${id}/decision`, `{"approved":true,"x":${nested(64)}}`));
    await expectTooDeep(
      await post('/v1/runs', `{"workflow":"refund","run":"deep","input":${nested(2_000)}}`, 'svc'),
    );
    await expectTooDeep(
      await post(
        `/v1/sessions/s-deep/messages`,
        `{"text":"hi","user":"c-1","agent":"bookstore","x":${nested(5_000)}}`,
        'svc',
      ),
    );
    const started = await post('/v1/runs', '{"workflow":"refund","run":"r1","input":1040}', 'svc');
    const run = (await started.json()) as { requests: Array<{ id: string }> };
    const requestId = run.requests[0]!.id;
    await expectTooDeep(
      await post(`/v1/runs/r1/requests/${requestId}/response`, `{"response":${nested(2_000)}}`),
    );
    // The decision still stands to be made: nothing was lost.
    const decided = await post(`/v1/approvals/${id}/decision`, `{"approved":true,"x":${nested(63)}}`);
    expect(decided.status).toBe(200);
    const answered = await post(
      `/v1/runs/r1/requests/${requestId}/response`,
      '{"response":{"approved":true,"note":"ok"}}',
    );
    expect(answered.status).toBe(200);
  });

  it('the inbox answer form refuses a too-deep JSON answer with a message, not a 500', async () => {
    const { fetch, signIn, server } = await live();
    const { cookie, csrf } = await signIn(tokens.mia);
    const started = await server.call('POST', '/v1/runs', {
      as: 'svc',
      body: { workflow: 'refund', run: 'r2', input: 1040 },
    });
    const requestId = started.json.requests[0].id as string;
    const answered = await fetch(`/runs/r2/requests/${requestId}/respond`, {
      method: 'POST',
      headers: { cookie },
      body: new URLSearchParams({ csrf, json: nested(2_000) }),
    });
    expect(answered.status).toBe(303);
    const page = await (await fetch(answered.headers.get('location')!, { headers: { cookie } })).text();
    expect(page).toContain('The answer nests deeper than 64 levels');
  });

  describe('wrong tokens are limited per client address; a correct token always works', () => {
    const wrong = (xff?: string) => ({
      headers: { authorization: 'Bearer not-a-token-at-all', ...(xff ? { 'x-forwarded-for': xff } : {}) },
    });
    const right = (xff?: string) => ({
      headers: { authorization: `Bearer ${tokens.alice}`, ...(xff ? { 'x-forwarded-for': xff } : {}) },
    });
    const signInForm = (token: string) => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, next: '/' }),
    });
    const statuses = async (edge: Live, inits: RequestInit[]) => {
      const out: number[] = [];
      for (const init of inits) out.push((await edge.fetch('/v1/approvals', init)).status);
      return out;
    };

    it('ten wrong tokens from one address: the next wrong one is 429, every right one still 200', async () => {
      const edge = await live();
      expect(
        await statuses(
          edge,
          Array.from({ length: 10 }, () => wrong()),
        ),
      ).toEqual(Array(10).fill(401));
      const limited = await edge.fetch('/v1/approvals', wrong());
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await edge.fetch('/v1/approvals', right())).status).toBe(200);
      // The sign-in form shares the count, and a right token still signs in.
      expect((await edge.fetch('/login', signInForm('not-a-token-at-all'))).status).toBe(429);
      const signedIn = await edge.fetch('/login', signInForm(tokens.mia));
      expect([signedIn.status, signedIn.headers.get('location')]).toEqual([303, '/']);
    });

    it('the sign-in form is limited on its own too', async () => {
      const edge = await live();
      for (let i = 0; i < 10; i++)
        expect((await edge.fetch('/login', signInForm(`wrong-token-${i}-0123456789`))).status).toBe(401);
      const limited = await edge.fetch('/login', signInForm('wrong-token-x-0123456789'));
      expect(limited.status).toBe(429);
      expect(await limited.text()).toContain('Too many failed attempts');
      expect((await edge.fetch('/login', signInForm(tokens.alice))).status).toBe(303);
    });

    it('X-Forwarded-For is ignored unless the peer is a trusted proxy', async () => {
      const edge = await live();
      const rotating = Array.from({ length: 11 }, (_, i) => wrong(`198.51.100.${i}`));
      expect((await statuses(edge, rotating)).at(-1)).toBe(429);
    });

    it('behind a trusted proxy: each forwarded client has its own count, and the left of the header proves nothing', async () => {
      const edge = await live({ trustProxy: 'loopback' });
      const attacker = '203.0.113.5';
      const guesses = Array.from({ length: 11 }, (_, i) => wrong(`10.9.9.${i}, ${attacker}`));
      expect(await statuses(edge, guesses)).toEqual([...Array(10).fill(401), 429]);
      // Another client behind the same proxy is not affected, and neither is a right token.
      expect((await edge.fetch('/v1/approvals', wrong('203.0.113.6'))).status).toBe(401);
      expect((await edge.fetch('/v1/approvals', right(attacker))).status).toBe(200);
      // A trusted hop on the right is skipped: the proxy chain ends at the attacker.
      expect((await edge.fetch('/v1/approvals', wrong(`${attacker}, 127.0.0.1`))).status).toBe(429);
    });

    it('IPv6 clients are counted by /64', async () => {
      const edge = await live({ trustProxy: '127.0.0.1' });
      const rotating = Array.from({ length: 11 }, (_, i) =>
        wrong(`2001:db8:1:2:${i.toString(16)}::${i + 1}`),
      );
      expect((await statuses(edge, rotating)).at(-1)).toBe(429);
      expect((await edge.fetch('/v1/approvals', wrong('2001:db8:1:3::1'))).status).toBe(401);
    });

    it('guessing spread over many addresses runs into the server-wide budget', async () => {
      const edge = await live({ trustProxy: 'loopback' });
      const spread: RequestInit[] = [];
      for (let address = 0; address < 20; address++)
        for (let guess = 0; guess < 5; guess++) spread.push(wrong(`192.0.2.${address}`));
      expect(new Set(await statuses(edge, spread))).toEqual(new Set([401]));
      expect((await edge.fetch('/v1/approvals', wrong('192.0.2.200'))).status).toBe(429);
      expect((await edge.fetch('/v1/approvals', right('192.0.2.200'))).status).toBe(200);
    });
  });

  it('a wrong method on a known path is 405 with Allow (API and pages); an unknown path stays 404', async () => {
    const { fetch, server } = await live({ chat: { secret: chatSecret } });
    const id = await raiseCancel(server);
    const auth = { authorization: `Bearer ${tokens.alice}` };
    const cases: Array<[string, string, string]> = [
      ['PUT', '/v1/approvals', 'GET, HEAD'],
      ['DELETE', `/v1/approvals/${id}`, 'GET, HEAD'],
      ['GET', `/v1/approvals/${id}/decision`, 'POST'],
      ['PATCH', '/v1/runs', 'GET, HEAD, POST'],
      ['PUT', '/', 'GET, HEAD'],
      ['GET', '/logout', 'POST'],
      ['DELETE', '/login', 'GET, HEAD, POST'],
      ['POST', '/chat', 'GET, HEAD'],
    ];
    for (const [method, path, allow] of cases) {
      const response = await fetch(path, { method, headers: { ...auth, accept: 'text/html' } });
      expect(response.status, `${method} ${path}`).toBe(405);
      expect(response.headers.get('allow'), `${method} ${path}`).toBe(allow);
      const text = await response.text();
      if (path.startsWith('/v1/'))
        expect(JSON.parse(text).error).toEqual({
          code: 'METHOD_NOT_ALLOWED',
          message: `This path does not answer ${method}; it answers ${allow}.`,
        });
      else expect(text).toContain(`does not answer ${method}`);
    }
    for (const [method, path] of [
      ['GET', '/v1/nothing'],
      ['PUT', '/v1/nothing/here'],
      ['POST', '/nothing'],
      ['GET', `/v1/approvals/${id}/decision/extra`],
    ] as const) {
      const response = await fetch(path, { method, headers: auth });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.headers.get('allow')).toBeNull();
    }
    // A known path with its own method still answers, and its own 404s stay 404.
    expect((await fetch('/v1/approvals/apr_missing', { headers: auth })).status).toBe(404);
    expect((await fetch('/v1/approvals', { method: 'HEAD', headers: auth })).status).toBe(200);
  });
});
