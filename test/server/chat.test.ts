import { UnsecuredJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors/config-error.ts';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { chatClient, chatSecret, customerToken, openSignInLink } from '../helpers/chat-client.ts';
import { type TestServer, testServer, tokens } from './helpers.ts';

/** The customer chat over real HTTP on loopback, with a clock the test moves. */
describe('the customer chat: customers sign in with a token from the host application', () => {
  let running: RunningServer | undefined;
  let server: TestServer;
  let clock = Date.parse('2026-12-01T10:00:00Z');

  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  async function listen(options: { secureCookies?: boolean } = {}): Promise<string> {
    clock = Date.parse('2026-12-01T10:00:00Z');
    server = testServer({ chat: { secret: chatSecret }, now: () => new Date(clock), ...options });
    running = await startServer(server, { host: '127.0.0.1', port: 0 });
    return running.url;
  }

  async function signIn(base: string, customer: string, expiresInMs = 3_600_000) {
    const { response, cookie } = await openSignInLink(
      base,
      await customerToken(customer, { expiresAtMs: clock + expiresInMs }),
    );
    expect(response.status).toBe(303);
    return chatClient(base, cookie);
  }

  /** Starts a conversation as the client's customer; returns its new session id. */
  async function startConversation(client: ReturnType<typeof chatClient>, text: string): Promise<string> {
    const sent = await client.send({ text });
    expect(sent.status).toBe(303);
    const session = new URL(sent.headers.get('location')!, 'http://x').searchParams.get('session');
    expect(session).toMatch(/^chat_[a-z2-7]{32}$/);
    return session!;
  }

  it('is not served unless the server is started with it', async () => {
    server = testServer();
    running = await startServer(server, { host: '127.0.0.1', port: 0 });
    const anyone = chatClient(running.url);
    expect((await anyone.get('/chat')).status).toBe(404);
    expect((await anyone.send({ session: 's', text: 'hi' }, {})).status).toBe(404);
  });

  it('without a sign-in every chat route answers 401, shows nothing and says how to get a link', async () => {
    const base = await listen();
    const customer = await signIn(base, 'c-100');
    const session = await startConversation(customer, 'Please cancel my order 1044.');
    const anyone = chatClient(base);
    const page = await anyone.get('/chat');
    expect(page.status).toBe(401);
    const text = await page.text();
    expect(text).toContain('You are not signed in to the chat.');
    expect(text).toContain('opens from a link that signs you in');
    for (const path of [
      `/chat?session=${session}`,
      // The old demo door: ?user= is not trusted any more.
      `/chat?session=${session}&user=c-100`,
      `/chat/log?session=${session}&user=c-100`,
      `/chat/events?session=${session}`,
    ]) {
      const response = await anyone.get(path);
      expect(response.status, path).toBe(401);
      expect(await response.text(), path).not.toContain('1044');
    }
    const before = (await server.store.loadMessages(session)).length;
    const posted = await anyone.send({ session, user: 'c-100', text: 'Cancel order 1043.', csrf: 'x' });
    expect(posted.status).toBe(401);
    expect(await server.store.loadMessages(session)).toHaveLength(before);
  });

  it('a sign-in link sets an HttpOnly, SameSite=Lax cookie for /chat and redirects without the token', async () => {
    const base = await listen();
    const token = await customerToken('c-100', { expiresAtMs: clock + 3_600_000 });
    const { response, cookie } = await openSignInLink(base, token, '&session=chat-x');
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/chat?session=chat-x');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const set = response.headers.get('set-cookie')!;
    expect(set).toMatch(/^countersign_chat=[\w-]+\.[\w-]+\.[\w-]+;/);
    expect(set).toContain('Max-Age=3600');
    expect(set).toContain('Path=/chat');
    expect(set).toContain('HttpOnly');
    expect(set).toContain('SameSite=Lax');
    expect(set).not.toContain('Secure');
    // The cookie is countersign's own, not the host application's token.
    expect(cookie).not.toContain(token);
    const page = await chatClient(base, cookie).get('/chat');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('as c-100, new conversation');
  });

  it('the cookie is Secure when the server is configured for secure cookies', async () => {
    const base = await listen({ secureCookies: true });
    const { response } = await openSignInLink(base, await customerToken('c-100'));
    expect(response.headers.get('set-cookie')).toContain('Secure');
  });

  it('refuses tokens that are forged, unsigned, of another algorithm, expired or for no valid customer', async () => {
    const base = await listen();
    const inAnHour = clock + 3_600_000;
    const exp = Math.floor(inAnHour / 1000);
    const seconds = (ms: number) => Math.floor(ms / 1000);
    const cookieOfC100 = (await signIn(base, 'c-100')).cookie!.split('=')[1]!;
    const refused: Array<[string, string, 'not valid' | 'expired']> = [
      ['another secret', await customerToken('c-100', { secret: 'x'.repeat(40) }), 'not valid'],
      ['alg none', new UnsecuredJWT({ sub: 'c-100', exp }).encode(), 'not valid'],
      ['alg none, signed part kept', `${new UnsecuredJWT({ sub: 'c-100', exp }).encode()}x`, 'not valid'],
      ['HS512 with the right secret', await customerToken('c-100', { alg: 'HS512' }), 'not valid'],
      ['HS384 with the right secret', await customerToken('c-100', { alg: 'HS384' }), 'not valid'],
      ['expired', await customerToken('c-100', { expiresAtMs: clock - 1000 }), 'expired'],
      [
        'expired within the clock skew',
        await customerToken('c-100', { expiresAtMs: clock - 10_000 }),
        'expired',
      ],
      ['no exp', await customerToken('c-100', { claims: { exp: undefined } }), 'not valid'],
      ['exp not a number', await customerToken('c-100', { claims: { exp: 'tomorrow' } }), 'not valid'],
      ['no sub', await customerToken('c-100', { claims: { sub: undefined } }), 'not valid'],
      ['sub not a customer id', await customerToken('c 100 <b>', {}), 'not valid'],
      ['sub a number', await customerToken('c-100', { claims: { sub: 100 } }), 'not valid'],
      [
        'nbf in 5 minutes',
        await customerToken('c-100', { claims: { nbf: seconds(clock + 300_000) } }),
        'not valid',
      ],
      [
        'iat in 5 minutes',
        await customerToken('c-100', { claims: { iat: seconds(clock + 300_000) } }),
        'not valid',
      ],
      ['our own cookie, replayed as a token', cookieOfC100, 'not valid'],
      ['not a JWT', 'hello', 'not valid'],
      ['empty', '', 'not valid'],
    ];
    for (const [what, token, problem] of refused) {
      const { response, cookie } = await openSignInLink(base, token);
      expect(response.status, what).toBe(401);
      expect(cookie, what).toBeNull();
      expect(await response.text(), what).toContain(
        `This sign-in link ${problem === 'expired' ? 'has expired' : 'is not valid'}.`,
      );
    }
    // A host clock a little ahead of ours is fine.
    for (const claims of [{ nbf: seconds(clock + 10_000) }, { iat: seconds(clock + 10_000) }]) {
      const { response } = await openSignInLink(base, await customerToken('c-100', { claims }));
      expect(response.status, JSON.stringify(claims)).toBe(303);
    }
  });

  it('a signed-in customer chats end to end: the request waits for approval, then the reply shows', async () => {
    const base = await listen();
    const customer = await signIn(base, 'c-100');
    const session = await startConversation(customer, 'Please cancel my order 1044.');
    expect((await server.store.getSession(session))?.principal).toBe('c-100');
    const waiting = await customer.get(`/chat?session=${session}`);
    expect(waiting.status).toBe(200);
    expect(waiting.headers.get('cache-control')).toBe('no-store');
    const page = await waiting.text();
    expect(page).toContain('Please cancel my order 1044.');
    expect(page).toContain('Waiting for approval');
    const [request] = (await server.call('GET', `/v1/approvals?session=${session}`, { as: 'alice' })).json;
    await server.call('POST', `/v1/approvals/${request.id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    const log = await (await customer.get(`/chat/log?session=${session}`)).text();
    expect(log).toContain('Cancelled order 1044');
    expect(log).not.toContain('Waiting for approval');
    // Sessions the backend opened for this customer are theirs in the chat too.
    await server.call('POST', '/v1/sessions/api-1/messages', {
      as: 'svc',
      body: { text: 'Where is my order 1044?', user: 'c-100', agent: 'bookstore' },
    });
    expect((await customer.get('/chat?session=api-1')).status).toBe(200);
    expect((await customer.send({ session: 'api-1', text: 'Thanks.' })).status).toBe(303);
  });

  it("another customer cannot read, follow or post into c-100's conversation: 404, as if it did not exist", async () => {
    const base = await listen();
    const c100 = await signIn(base, 'c-100');
    const session = await startConversation(c100, 'Please cancel my order 1044.');
    await server.call('POST', '/v1/sessions/nobodys/messages', {
      as: 'svc',
      body: { text: 'Where is my order 1044?', agent: 'bookstore' },
    });
    const c999 = await signIn(base, 'c-999');
    const before = (await server.store.loadMessages(session)).length;
    for (const id of [session, 'nobodys', 'never-created']) {
      for (const path of [`/chat?session=${id}`, `/chat/log?session=${id}`, `/chat/events?session=${id}`]) {
        const response = await c999.get(path);
        expect(response.status, path).toBe(404);
        expect(await response.text(), path).not.toContain('1044');
      }
      const posted = await c999.send({ session: id, text: 'Cancel order 1044.' });
      expect(posted.status, id).toBe(404);
    }
    expect(await server.store.loadMessages(session)).toHaveLength(before);
    expect(await server.store.getSession('never-created')).toBeNull();
    // A customer cannot name the id of a new conversation either: it is always a fresh one.
    const fresh = await startConversation(c999, 'Where is my order 1050?');
    expect(fresh).not.toBe(session);
    expect((await server.store.getSession(fresh))?.principal).toBe('c-999');
  });

  it("the chat's event stream carries only the customer's own conversation", async () => {
    const base = await listen();
    const c100 = await signIn(base, 'c-100');
    const c999 = await signIn(base, 'c-999');
    const mine = await startConversation(c100, 'Where is my order 1044?');
    const stream = await fetch(`${base}/chat/events?session=${mine}`, { headers: { cookie: c100.cookie! } });
    expect(stream.status).toBe(200);
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const until = async (part: string) => {
      while (!text.includes(part)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${part}: ${text}`);
        text += value;
      }
    };
    await until('event: ready');
    const theirs = await startConversation(c999, 'Please cancel my order 1044.');
    await c100.send({ session: mine, text: 'Please cancel my order 1044.' });
    await until('event: approval.requested');
    await reader.cancel();
    expect(text).toContain(`"session":"${mine}"`);
    expect(text).not.toContain(theirs);
    expect(text).not.toContain('cancel_order');
  });

  it('a message needs the page token and our own origin (CSRF)', async () => {
    const base = await listen();
    const c100 = await signIn(base, 'c-100');
    const session = await startConversation(c100, 'Where is my order 1044?');
    const c999 = await signIn(base, 'c-999');
    const before = (await server.store.loadMessages(session)).length;
    const forged: Array<[string, Record<string, string>, Record<string, string>]> = [
      ['no token', { csrf: '' }, {}],
      ['a guessed token', { csrf: 'guess' }, {}],
      ["another customer's token", { csrf: await c999.csrf() }, {}],
      ['from another site', {}, { 'sec-fetch-site': 'cross-site' }],
      ['with another Origin', {}, { origin: 'https://evil.example' }],
    ];
    for (const [what, fields, headers] of forged) {
      const response = await c100.send({ session, text: 'Please cancel my order 1044.', ...fields }, headers);
      expect(response.status, what).toBe(403);
    }
    expect(await server.store.loadMessages(session)).toHaveLength(before);
  });

  it("the cookie stops working at the token's exp, and after 12 hours at most", async () => {
    const base = await listen();
    const short = await signIn(base, 'c-100', 60_000);
    const long = await signIn(base, 'c-100', 30 * 24 * 3_600_000);
    expect((await short.get('/chat')).status).toBe(200);
    clock += 60_000;
    expect((await short.get('/chat')).status).toBe(401);
    expect((await short.send({ text: 'hi', csrf: 'x' })).status).toBe(401);
    expect((await long.get('/chat')).status).toBe(200);
    clock += 12 * 3_600_000 - 60_000;
    expect((await long.get('/chat')).status).toBe(401);
  });

  it("an approver's inbox cookie signs nobody into the chat, and a customer's cookie signs nobody into the inbox", async () => {
    const base = await listen();
    const c100 = await signIn(base, 'c-100');
    const session = await startConversation(c100, 'Please cancel my order 1044.');
    // tokens.customer belongs to an approver named c-100: still not the customer c-100.
    for (const token of [tokens.alice, tokens.customer]) {
      const login = await fetch(`${base}/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, next: '/' }).toString(),
      });
      expect(login.status).toBe(303);
      const inboxCookie = login.headers.get('set-cookie')!.split(';')[0]!;
      expect((await fetch(`${base}/`, { headers: { cookie: inboxCookie } })).status).toBe(200);
      const approver = chatClient(base, inboxCookie);
      expect((await approver.get('/chat')).status).toBe(401);
      expect((await approver.get(`/chat/log?session=${session}`)).status).toBe(401);
      const bearer = { authorization: `Bearer ${token}` };
      expect((await chatClient(base).get(`/chat/log?session=${session}`, bearer)).status).toBe(401);
    }
    const chatValue = c100.cookie!.split('=')[1]!;
    for (const cookie of [c100.cookie!, `countersign_session=${chatValue}`]) {
      const inbox = await fetch(`${base}/`, { redirect: 'manual', headers: { cookie, accept: 'text/html' } });
      expect(inbox.status).toBe(303);
      expect(inbox.headers.get('location')).toMatch(/^\/login/);
      expect((await fetch(`${base}/v1/approvals`, { headers: { cookie } })).status).toBe(401);
    }
  });

  it('refuses a chat secret too short to be safe', () => {
    expect(() => testServer({ chat: { secret: 'short' } })).toThrow(ConfigError);
    expect(() => testServer({ chat: { secret: 'short' } })).toThrow(/at least 32/);
  });
});
