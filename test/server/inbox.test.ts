import { describe, expect, it } from 'vitest';
import { orderStatus } from '../helpers/bookstore-agent.ts';
import { raiseCancel, type TestServer, testServer, tokens } from './helpers.ts';

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

async function signIn(server: TestServer, token: string): Promise<string> {
  const response = await server.app.request('/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form({ token, next: '/' }),
  });
  expect(response.status).toBe(303);
  const setCookie = response.headers.get('set-cookie')!;
  expect(setCookie).toMatch(/HttpOnly/);
  expect(setCookie).toMatch(/SameSite=Strict/);
  return setCookie.split(';')[0]!;
}

async function page(server: TestServer, path: string, cookie?: string) {
  const response = await server.app.request(path, {
    headers: { accept: 'text/html', ...(cookie ? { cookie } : {}) },
  });
  return { status: response.status, html: await response.text(), headers: response.headers };
}

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!;

async function post(
  server: TestServer,
  path: string,
  cookie: string,
  fields: Record<string, string>,
  headers = {},
) {
  return server.app.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', cookie, ...headers },
    body: form(fields),
  });
}

describe('the approval inbox (server-rendered, works without JavaScript)', () => {
  it('sends a visitor without a session to sign in; a wrong token is refused, then rate limited; a right one works', async () => {
    const server = testServer({ login: { maxFailures: 2, windowMs: 60_000 } });
    const home = await server.app.request('/', { headers: { accept: 'text/html' } });
    expect(home.status).toBe(303);
    expect(home.headers.get('location')).toBe('/login?next=%2F');
    const login = await page(server, '/login');
    expect(login.html).toContain('<label for="token">');
    for (let i = 0; i < 2; i++) {
      const wrong = await server.app.request('/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form({ token: 'wrong-token-wrong-token' }),
      });
      expect(wrong.status).toBe(401);
    }
    const limited = await server.app.request('/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ token: 'wrong-token-wrong-token' }),
    });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBeTruthy();
    // A right token is never refused, however often this address failed.
    const right = await server.app.request('/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ token: tokens.alice }),
    });
    expect(right.status).toBe(303);
  });

  it('lists pending requests with every argument, effect, customer, age and expiry; approve by form + redirect', async () => {
    const server = testServer();
    const id = await raiseCancel(server);
    const cookie = await signIn(server, tokens.alice);
    const inbox = await page(server, '/', cookie);
    expect(inbox.status).toBe(200);
    expect(inbox.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(inbox.html).toContain('<meta name="viewport"');
    expect(inbox.html).toContain(`id="${id}"`);
    expect(inbox.html).toContain('cancel_order');
    expect(inbox.html).toContain('&quot;orderId&quot;: 1044');
    expect(inbox.html).toContain('Cancel order 1044 for customer c-100');
    expect(inbox.html).toContain('data-countdown');
    expect(inbox.html).toContain('data-age');
    expect(inbox.html).toContain('Signed in as <strong>alice</strong>');
    expect(inbox.html).toContain('list="suggested-reasons"');
    // cancel_order is standing: false, so no "always" offer.
    expect(inbox.html).not.toContain('name="remember"');

    const decided = await post(server, `/approvals/${id}/decide`, cookie, {
      csrf: csrfOf(inbox.html),
      verdict: 'approve',
      return: '/',
    });
    expect(decided.status).toBe(303);
    const next = decided.headers.get('location')!;
    expect(next).toMatch(/^\/\?flash=/);
    const after = await page(server, next, cookie);
    expect(after.html).toContain('Approved. The agent replied: Cancelled order 1044');
    expect(after.html).toContain('No requests are waiting.');
    expect(await orderStatus(server.store, 1044)).toBe('Cancelled');

    const detail = await page(server, `/approvals/${id}`, cookie);
    // Alice reads her own decision in her words; times are in UTC until the browser tells its zone.
    expect(detail.html).toMatch(/You approved this at \d+ \w{3} \d{4}, \d{2}:\d{2} UTC\./);
    expect(detail.html).toContain('Please cancel my order 1044.');
    expect(detail.html).toContain('succeeded');
    const history = await page(server, '/history', cookie);
    expect(history.html).toContain('alice');
    expect(history.html).toContain('approved');
  });

  it('refuses a decision form without the CSRF token or from another site', async () => {
    const server = testServer();
    const id = await raiseCancel(server);
    const cookie = await signIn(server, tokens.alice);
    const csrf = csrfOf((await page(server, '/', cookie)).html);
    const forged = await post(server, `/approvals/${id}/decide`, cookie, { verdict: 'approve' });
    expect(forged.status).toBe(403);
    const wrong = await post(server, `/approvals/${id}/decide`, cookie, {
      verdict: 'approve',
      csrf: `${csrf}x`,
    });
    expect(wrong.status).toBe(403);
    const crossSite = await post(
      server,
      `/approvals/${id}/decide`,
      cookie,
      { verdict: 'approve', csrf },
      { origin: 'https://evil.example' },
    );
    expect(crossSite.status).toBe(403);
    expect((await server.call('GET', `/v1/approvals/${id}`, { as: 'alice' })).json.status).toBe('pending');
  });

  it('a rejection needs a reason; the loser of a race is told who decided first', async () => {
    const server = testServer();
    const id = await raiseCancel(server);
    const alice = await signIn(server, tokens.alice);
    const mia = await signIn(server, tokens.mia);
    const aliceCsrf = csrfOf((await page(server, `/approvals/${id}`, alice)).html);
    const miaCsrf = csrfOf((await page(server, `/approvals/${id}`, mia)).html);
    const noReason = await post(server, `/approvals/${id}/decide`, alice, {
      csrf: aliceCsrf,
      verdict: 'reject',
      reason: ' ',
      return: `/approvals/${id}`,
    });
    expect((await page(server, noReason.headers.get('location')!, alice)).html).toContain(
      'A rejection needs a reason',
    );

    const rejected = await post(server, `/approvals/${id}/decide`, alice, {
      csrf: aliceCsrf,
      verdict: 'reject',
      reason: 'Support will call you first.',
      return: `/approvals/${id}`,
    });
    expect(rejected.headers.get('location')).toMatch(new RegExp(`^/approvals/${id}\\?flash=`));
    const late = await post(server, `/approvals/${id}/decide`, mia, {
      csrf: miaCsrf,
      verdict: 'approve',
      return: `/approvals/${id}`,
    });
    const latePage = await page(server, late.headers.get('location')!, mia);
    expect(latePage.html).toMatch(
      /Someone was quicker: alice rejected this at \d+ \w{3} \d{4}, \d{2}:\d{2} UTC\./,
    );
    expect(latePage.html).toContain('Support will call you first.');
    expect(latePage.html).toContain('Your decision was not recorded; theirs stands.');
    // A flash is for the person it was written for.
    expect((await page(server, late.headers.get('location')!, alice)).html).not.toContain(
      'Someone was quicker',
    );
  });

  it('renders arguments as text: markup in an argument is escaped everywhere', async () => {
    const server = testServer();
    const { kitchenAgent } = await import('../../examples/kitchen/app.ts');
    const { scriptModel } = await import('../helpers/script-model.ts');
    const xss = '<script>window.__xss=1</script>';
    const evil = testServer({
      agents: [
        kitchenAgent.with({
          model: scriptModel([
            [
              {
                tool: 'add_to_shopping_list',
                args: { item: xss, quantity: '"><img src=x onerror=alert(1)>' },
              },
            ],
          ]),
        }),
      ],
    });
    const turn = await evil.call('POST', '/v1/sessions/k1/messages', {
      as: 'svc',
      body: { text: 'add it', user: 'c-100' },
    });
    const id = turn.json.approvals[0].id;
    const cookie = await signIn(evil, tokens.alice);
    for (const path of ['/', `/approvals/${id}`, `/inbox/pane/${id}`, `/inbox/rows/${id}`]) {
      const { html } = await page(evil, path, cookie);
      expect(html, path).not.toContain('<script>window');
      expect(html, path).not.toContain('<img');
      expect(html, path).toContain('&lt;script&gt;window.__xss=1&lt;/script&gt;');
    }
    await server.close();
  });

  it('the audit page verifies the chain', async () => {
    const server = testServer();
    await raiseCancel(server);
    const cookie = await signIn(server, tokens.alice);
    const audit = await page(server, '/audit?verify=1', cookie);
    expect(audit.html).toContain('Audit chain intact');
    expect(audit.html).toContain('request.raised');
  });

  it('behind a proxy: the identity header signs people in, and its forms still need the CSRF token', async () => {
    const server = testServer({ identityHeader: 'X-Forwarded-User', rolesHeader: 'X-Forwarded-Groups' });
    const id = await raiseCancel(server);
    const proxy = { 'x-forwarded-user': 'sam@example.com', 'x-forwarded-groups': 'support' };
    const inbox = await server.app.request('/', { headers: { accept: 'text/html', ...proxy } });
    const html = await inbox.text();
    expect(html).toContain('Signed in as <strong>sam@example.com</strong> (support)');
    const fields = (csrf: string) =>
      new URLSearchParams({ csrf, verdict: 'approve', return: '/' }).toString();
    const post = (body: string) =>
      server.app.request(`/approvals/${id}/decide`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', ...proxy },
        body,
      });
    expect((await post(fields('forged'))).status).toBe(403);
    expect((await post(fields(csrfOf(html)))).status).toBe(303);
    expect((await server.call('GET', `/v1/approvals/${id}`, { as: 'alice' })).json.decision.by).toBe(
      'sam@example.com',
    );
  });
});
