import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { orderStatus } from '../helpers/bookstore-agent.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL, withAdmin } from '../helpers/postgres.ts';
import { approvers, raiseCancel, type TestServer, testServer, tokens } from './helpers.ts';

const pgUrl = await postgresForTests();

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const cookieValue = (cookie: string) => cookie.slice(cookie.indexOf('=') + 1);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

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
  const cookie = setCookie.split(';')[0]!;
  expect(cookieValue(cookie)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  return cookie;
}

async function page(server: TestServer, path: string, cookie: string) {
  const response = await server.app.request(path, { headers: { accept: 'text/html', cookie } });
  return { status: response.status, html: await response.text(), location: response.headers.get('location') };
}

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!;

function post(server: TestServer, path: string, cookie: string, fields: Record<string, string>) {
  return server.app.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', cookie },
    body: form(fields),
  });
}

/** Signed in: the inbox renders for this approver. */
async function expectSignedIn(server: TestServer, cookie: string, name: string): Promise<string> {
  const home = await page(server, '/', cookie);
  expect(home.status).toBe(200);
  expect(home.html).toContain(`Signed in as <strong>${name}</strong>`);
  return home.html;
}

/** Signed out: the inbox sends the browser to sign in, the API answers 401. */
async function expectSignedOut(server: TestServer, cookie: string): Promise<void> {
  const home = await page(server, '/', cookie);
  expect(home.status).toBe(303);
  expect(home.location).toBe('/login?next=%2F');
  const api = await server.app.request('/v1/approvals', { headers: { cookie } });
  expect(api.status).toBe(401);
}

async function logout(server: TestServer, cookie: string, csrf: string): Promise<void> {
  const out = await post(server, '/logout', cookie, { csrf });
  expect(out.status).toBe(303);
  expect(out.headers.get('location')).toBe('/login');
  expect(out.headers.get('set-cookie')).toMatch(/countersign_session=;/);
}

const servers: TestServer[] = [];
const stores: Store[] = [];
const dirs: string[] = [];
function serverOn(store: Store, overrides: Parameters<typeof testServer>[0] = {}): TestServer {
  const server = testServer({ store, ...overrides });
  servers.push(server);
  return server;
}

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('inbox sign-ins are kept in the store', () => {
  it('survive a restart on the same SQLite file: the cookie still reads and decides with its CSRF token', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'countersign-websessions-'));
    dirs.push(dir);
    const path = join(dir, 'store.db');
    const firstStore = createSqliteStore({ path });
    const first = testServer({ store: firstStore });
    const id = await raiseCancel(first);
    const cookie = await signIn(first, tokens.alice);
    const csrfBefore = csrfOf(await expectSignedIn(first, cookie, 'alice'));
    await first.close();
    await firstStore.close();

    const store = createSqliteStore({ path });
    stores.push(store);
    const restarted = serverOn(store);
    const html = await expectSignedIn(restarted, cookie, 'alice');
    // The same sign-in, so the same CSRF token on the new process.
    expect(csrfOf(html)).toBe(csrfBefore);
    const forged = await post(restarted, `/approvals/${id}/decide`, cookie, {
      verdict: 'approve',
      csrf: 'x',
    });
    expect(forged.status).toBe(403);
    const decided = await post(restarted, `/approvals/${id}/decide`, cookie, {
      csrf: csrfBefore,
      verdict: 'approve',
      return: '/',
    });
    expect(decided.status).toBe(303);
    expect(decided.headers.get('location')).toMatch(/^\/\?flash=/);
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
    expect((await restarted.call('GET', `/v1/approvals/${id}`, { as: 'mia' })).json).toMatchObject({
      status: 'approved',
      decision: { by: 'alice' },
    });
    // The cookie still only reads the API.
    const write = await restarted.app.request(`/v1/rules/none/revoke`, {
      method: 'POST',
      headers: { cookie },
    });
    expect(write.status).toBe(401);
  });

  it('the database holds only the SHA-256 of the cookie value, never the value', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'countersign-websessions-'));
    dirs.push(dir);
    const path = join(dir, 'store.db');
    const store = createSqliteStore({ path });
    stores.push(store);
    const server = serverOn(store);
    const cookie = await signIn(server, tokens.mia);
    const csrf = csrfOf(await expectSignedIn(server, cookie, 'mia'));
    const value = cookieValue(cookie);
    const rows = (() => {
      const db = new DatabaseSync(path, { readOnly: true });
      try {
        return db.prepare('SELECT * FROM web_sessions').all();
      } finally {
        db.close();
      }
    })();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id_hash: sha256(value), approver: 'mia' });
    // No column carries the cookie, the CSRF token or the roles.
    const dumped = JSON.stringify(rows);
    expect(dumped).not.toContain(value);
    expect(dumped).not.toContain(csrf);
    expect(dumped).not.toContain('manager');
    // Nor any byte of the files (the WAL included), where the hash is found.
    let sawHash = false;
    for (const file of await readdir(dir)) {
      const bytes = await readFile(join(dir, file));
      expect(bytes.includes(Buffer.from(value)), file).toBe(false);
      sawHash ||= bytes.includes(Buffer.from(sha256(value)));
    }
    expect(sawHash).toBe(true);
  });

  it('a removed approver is signed out at the next request; a removed role takes effect too', async () => {
    const store = createMemoryStore();
    const before = serverOn(store);
    const turn = await before.call('POST', '/v1/sessions/r1/messages', {
      as: 'svc',
      body: { text: 'Refund me please.', user: 'c-200', agent: 'refund-desk' },
    });
    const refund = turn.json.approvals[0].id as string;
    const alice = await signIn(before, tokens.alice);
    const mia = await signIn(before, tokens.mia);
    await expectSignedIn(before, alice, 'alice');
    const miaDetail = await page(before, `/approvals/${refund}`, mia);
    expect(miaDetail.html).not.toContain('needs the manager role');
    expect(miaDetail.html).toContain('name="verdict"');

    // The next configuration: alice is gone, mia is no longer a manager.
    const after = serverOn(store, {
      approvers: approvers
        .filter((entry) => entry.name !== 'alice')
        .map((entry) => (entry.name === 'mia' ? { ...entry, roles: ['support'] } : entry)),
    });
    await expectSignedOut(after, alice);
    const demoted = await page(after, `/approvals/${refund}`, mia);
    expect(demoted.status).toBe(200);
    expect(demoted.html).toContain('Signed in as <strong>mia</strong> (support)');
    expect(demoted.html).toContain('Deciding this request needs the manager role; mia has support.');
    const refused = await post(after, `/approvals/${refund}/decide`, mia, {
      csrf: csrfOf(demoted.html),
      verdict: 'approve',
      return: `/approvals/${refund}`,
    });
    expect(refused.status).toBe(303);
    expect((await page(after, refused.headers.get('location')!, mia)).html).toContain(
      'You cannot decide this one: Deciding this request needs the manager role; mia has support.',
    );
    expect((await after.call('GET', `/v1/approvals/${refund}`, { as: 'mia' })).json.status).toBe('pending');
    // The old configuration still knows both as they were: only the configuration changed.
    await expectSignedIn(before, alice, 'alice');
  });

  it('expires 12 hours after the last request, not after sign-in', async () => {
    let now = Date.UTC(2031, 0, 1);
    const hour = 60 * 60 * 1000;
    const store = createMemoryStore();
    const server = serverOn(store, { now: () => new Date(now) });
    const cookie = await signIn(server, tokens.alice);
    now += 11 * hour;
    await expectSignedIn(server, cookie, 'alice');
    now += 11 * hour;
    await expectSignedIn(server, cookie, 'alice');
    now += 12 * hour - 1;
    await expectSignedIn(server, cookie, 'alice');
    now += 12 * hour;
    await expectSignedOut(server, cookie);
    // Gone for good: the clock going back does not revive it once a sign-in pruned it.
    await signIn(server, tokens.mia);
    now -= 12 * hour;
    await expectSignedOut(server, cookie);
  });

  it('logout deletes the sign-in for every instance on the SQLite file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'countersign-websessions-'));
    dirs.push(dir);
    const path = join(dir, 'store.db');
    const storeA = createSqliteStore({ path });
    const storeB = createSqliteStore({ path });
    stores.push(storeA, storeB);
    const a = serverOn(storeA);
    const b = serverOn(storeB);
    const cookie = await signIn(a, tokens.alice);
    const csrf = csrfOf(await expectSignedIn(b, cookie, 'alice'));
    await logout(b, cookie, csrf);
    await expectSignedOut(a, cookie);
    await expectSignedOut(b, cookie);
    expect(await storeA.getWebSession(sha256(cookieValue(cookie)), Date.now())).toBeNull();
  });
});

describe.skipIf(pgUrl === null)('inbox sign-ins on PostgreSQL, shared by two instances', () => {
  const schema = freshSchema('websessions');
  afterAll(async () => {
    await dropSchema(schema);
  });

  it('sign in on A, read and decide on B; logout on B signs out on A; only the hash is stored', async () => {
    const storeA = await createPostgresStore({ connectionString: TEST_PG_URL, schema });
    const storeB = await createPostgresStore({ connectionString: TEST_PG_URL, schema });
    stores.push(storeA, storeB);
    const a = serverOn(storeA);
    const b = serverOn(storeB);
    const id = await raiseCancel(a);
    const cookie = await signIn(a, tokens.alice);
    const html = await expectSignedIn(b, cookie, 'alice');
    expect(html).toContain(`id="${id}"`);
    const decided = await post(b, `/approvals/${id}/decide`, cookie, {
      csrf: csrfOf(html),
      verdict: 'approve',
      return: '/',
    });
    expect(decided.status).toBe(303);
    expect((await a.call('GET', `/v1/approvals/${id}`, { as: 'mia' })).json).toMatchObject({
      status: 'approved',
      decision: { by: 'alice' },
    });

    const value = cookieValue(cookie);
    const rows = await withAdmin(
      async (client) => (await client.query(`SELECT * FROM "${schema}".web_sessions`)).rows,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id_hash: sha256(value), approver: 'alice' });
    expect(JSON.stringify(rows)).not.toContain(value);

    await logout(b, cookie, csrfOf(html));
    await expectSignedOut(a, cookie);
    const left = await withAdmin(
      async (client) => (await client.query(`SELECT count(*)::int AS n FROM "${schema}".web_sessions`)).rows,
    );
    expect(left).toEqual([{ n: 0 }]);
  });
});
