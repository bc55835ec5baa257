import { describe, expect, it } from 'vitest';
import { SessionBusyError } from '../../src/core/errors/session-busy-error.ts';
import { createApproverDirectory, parseApproverEntries } from '../../src/server/auth/approver-tokens.ts';
import { statusOfCode, toErrorReply } from '../../src/server/http/error-status.ts';
import { ServerError } from '../../src/server/http/server-error.ts';
import { serverConfigFromEnv } from '../../src/server/server-config.ts';
import { raiseCancel, testServer, tokens } from './helpers.ts';

describe('who may call and approve', () => {
  it('parses name:role[+role]:token entries and keeps only hashes', () => {
    const entries = parseApproverEntries(
      'alice:support:aaaaaaaaaaaaaaaa1, bob:support+manager:bbbbbbbbbbbbbbbb:with:colons',
      'test',
    );
    expect(entries).toEqual([
      { name: 'alice', roles: ['support'], token: 'aaaaaaaaaaaaaaaa1' },
      { name: 'bob', roles: ['support', 'manager'], token: 'bbbbbbbbbbbbbbbb:with:colons' },
    ]);
    const directory = createApproverDirectory(entries);
    expect(directory.authenticate('bbbbbbbbbbbbbbbb:with:colons')).toEqual({
      name: 'bob',
      roles: ['support', 'manager'],
      via: 'token',
    });
    expect(directory.authenticate('aaaaaaaaaaaaaaaa')).toBeNull();
    expect(JSON.stringify(directory)).not.toContain('aaaaaaaaaaaaaaaa1');
    expect(() => parseApproverEntries('alice:support:short', 'test')).toThrow(/shorter than 16/);
    expect(() => parseApproverEntries('alice-no-token', 'test')).toThrow(/name:role/);
    expect(() => parseApproverEntries('alice:Boss!:aaaaaaaaaaaaaaaa1', 'test')).toThrow(/Role/);
  });

  it('without configured approvers, serve gets a demo approver with support and manager', () => {
    const config = serverConfigFromEnv({});
    expect(config.demoApprover).toMatchObject({ name: 'demo', roles: ['support', 'manager'] });
    expect(config.demoApprover!.token.length).toBeGreaterThanOrEqual(16);
    expect(serverConfigFromEnv({ COUNTERSIGN_TOKENS: 'a:support:0123456789abcdef' }).demoApprover).toBeNull();
    expect(serverConfigFromEnv({ COUNTERSIGN_IDENTITY_HEADER: 'X-Forwarded-User' }).demoApprover).toBeNull();
    expect(() => serverConfigFromEnv({ COUNTERSIGN_WEBHOOK_URL: 'http://127.0.0.1:1/' })).toThrow(/SECRET/);
  });

  it('maps every code to its status in one table', () => {
    expect(statusOfCode).toMatchObject({
      INVALID_INPUT: 400,
      UNAUTHENTICATED: 401,
      FORBIDDEN: 403,
      NOT_FOUND: 404,
      ALREADY_DECIDED: 409,
      EXPIRED: 410,
      PAYLOAD_TOO_LARGE: 413,
      RATE_LIMITED: 429,
      MODEL_ERROR: 502,
      SESSION_BUSY: 503,
      STORE_UNAVAILABLE: 503,
    });
    const busy = toErrorReply(new SessionBusyError('busy'));
    expect(busy).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
    expect(toErrorReply(new Error('secret detail'))).toMatchObject({
      status: 500,
      body: { error: { code: 'INTERNAL' } },
    });
    expect(JSON.stringify(toErrorReply(new Error('secret detail')))).not.toContain('secret detail');
    expect(
      toErrorReply(new ServerError('RATE_LIMITED', 'slow down', { retryAfter: 30 })).headers['retry-after'],
    ).toBe('30');
  });

  it('401 without or with a wrong token; repeated failures are rate limited with 429, a right token still works', async () => {
    const server = testServer({ login: { maxFailures: 3, windowMs: 60_000 } });
    const none = await server.call('GET', '/v1/approvals');
    expect(none.status).toBe(401);
    expect(none.json.error.code).toBe('UNAUTHENTICATED');
    expect(none.headers.get('www-authenticate')).toContain('Bearer');
    for (let i = 0; i < 3; i++) {
      const wrong = await server.call('GET', '/v1/approvals', {
        headers: { authorization: 'Bearer not-a-token-at-all' },
      });
      expect(wrong.status).toBe(401);
    }
    expect((await server.call('GET', '/v1/approvals', { as: 'alice' })).status).toBe(200);
    const limited = await server.call('GET', '/v1/approvals', {
      headers: { authorization: 'Bearer not-a-token-at-all' },
    });
    expect(limited.status).toBe(429);
    expect(limited.json.error.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('trusts the identity header only when configured, with roles from the roles header', async () => {
    const plain = testServer();
    const ignored = await plain.call('GET', '/v1/approvals', { headers: { 'x-forwarded-user': 'alice' } });
    expect(ignored.status).toBe(401);

    const proxied = testServer({ identityHeader: 'X-Forwarded-User', rolesHeader: 'X-Forwarded-Groups' });
    const id = await raiseCancel(proxied);
    const read = await proxied.call('GET', '/v1/approvals', {
      headers: { 'x-forwarded-user': 'sam@example.com' },
    });
    expect(read.status).toBe(200);
    const decided = await proxied.call('POST', `/v1/approvals/${id}/decision`, {
      body: { approved: true },
      headers: { 'x-forwarded-user': 'sam@example.com', 'x-forwarded-groups': 'support' },
    });
    expect(decided.status).toBe(200);
    expect((await proxied.call('GET', `/v1/approvals/${id}`, { as: 'alice' })).json.decision.by).toBe(
      'sam@example.com',
    );
    const crossSite = await proxied.call('POST', '/v1/rules/rule_x/revoke', {
      headers: { 'x-forwarded-user': 'sam@example.com', origin: 'https://evil.example' },
    });
    expect(crossSite.status).toBe(401);
  });

  it('the inbox cookie reads the API but cannot change anything through it', async () => {
    const server = testServer();
    const id = await raiseCancel(server);
    const login = await server.app.request('/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${tokens.alice}&next=%2F`,
    });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const read = await server.call('GET', '/v1/approvals', { headers: { cookie } });
    expect(read.status).toBe(200);
    const write = await server.call('POST', `/v1/approvals/${id}/decision`, {
      body: { approved: true },
      headers: { cookie },
    });
    expect(write.status).toBe(401);
    expect((await server.call('GET', `/v1/approvals/${id}`, { as: 'alice' })).json.status).toBe('pending');
  });
});
