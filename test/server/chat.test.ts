import { describe, expect, it } from 'vitest';
import { testServer } from './helpers.ts';

const send = (server: ReturnType<typeof testServer>, fields: Record<string, string>, headers = {}) =>
  server.app.request('/chat/send', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', ...headers },
    body: new URLSearchParams(fields).toString(),
  });

describe('the customer chat page', () => {
  it('is not served unless the server is started with it', async () => {
    const server = testServer();
    expect((await server.app.request('/chat', { headers: { accept: 'text/html' } })).status).toBe(404);
    expect((await send(server, { session: 's', user: 'c-100', text: 'hi' })).status).toBe(404);
  });

  it('works as plain forms: send, then see "waiting for approval" until a person decides', async () => {
    const server = testServer({ chat: true });
    const start = await (await server.app.request('/chat')).text();
    expect(start).toContain('name="session"');
    expect(start).toContain('value="c-100"');
    const sent = await send(server, {
      session: 'w1',
      user: 'c-100',
      agent: 'bookstore',
      text: 'Please cancel my order 1044.',
    });
    expect(sent.status).toBe(303);
    const back = sent.headers.get('location')!;
    expect(back).toBe('/chat?session=w1&user=c-100&agent=bookstore');
    const waiting = await (await server.app.request(back)).text();
    expect(waiting).toContain('Please cancel my order 1044.');
    expect(waiting).toContain('Waiting for approval');
    const [request] = (await server.call('GET', '/v1/approvals?session=w1', { as: 'alice' })).json;
    await server.call('POST', `/v1/approvals/${request.id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    const log = await (await server.app.request('/chat/log?session=w1&user=c-100&agent=bookstore')).text();
    expect(log).toContain('Cancelled order 1044');
    expect(log).not.toContain('Waiting for approval');
  });

  it('another customer cannot take over a conversation, and a post from another site is refused', async () => {
    const server = testServer({ chat: true });
    await send(server, { session: 'w2', user: 'c-100', text: 'Please cancel my order 1044.' });
    const other = await send(server, { session: 'w2', user: 'c-200', text: 'Cancel order 1050.' });
    const page = await (await server.app.request(other.headers.get('location')!)).text();
    expect(page).toContain('belongs to c-100');
    const crossSite = await send(
      server,
      { session: 'w3', user: 'c-100', text: 'hi' },
      { 'sec-fetch-site': 'cross-site' },
    );
    expect(crossSite.status).toBe(403);
  });
});
