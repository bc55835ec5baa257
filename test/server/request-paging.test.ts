import { describe, expect, it } from 'vitest';
import { at, byPerson, leasedSession, raise, request } from '../../src/store/conformance/fixtures.ts';
import { testServer } from './helpers.ts';

/** Every list of requests is a keyset page: the body stays an array, the cursor is in the headers. */
describe('GET /v1/requests (and /v1/approvals) pages with a cursor', () => {
  async function seeded() {
    const server = testServer();
    await leasedSession(server.store, 's1');
    await raise(
      server.store,
      's1',
      Array.from({ length: 7 }, (_, index) =>
        request({
          id: `r${index}`,
          session: 's1',
          createdAt: at(index),
          customer: index === 3 ? 'Carol Jones' : 'c-200',
          tool: index % 2 === 0 ? 'cancel_order' : 'place_order',
        }),
      ),
    );
    return server;
  }

  const ids = (json: Array<{ id: string }>) => json.map((item) => item.id);

  it('follows Link rel="next" to the end; the last page has none', async () => {
    const server = await seeded();
    let path: string | null = '/v1/requests?status=pending&limit=3&count=true';
    const pages: string[][] = [];
    while (path !== null) {
      const response = await server.call('GET', path, { as: 'alice' });
      expect(response.status).toBe(200);
      expect(response.headers.get('x-total-count')).toBe('7');
      expect(response.headers.get('x-total-capped')).toBeNull();
      pages.push(ids(response.json));
      const link = response.headers.get('link');
      const cursor = response.headers.get('x-next-cursor');
      if (link === null) {
        expect(cursor).toBeNull();
        path = null;
      } else {
        const match = /^<([^>]+)>; rel="next"$/.exec(link);
        expect(match?.[1]).toContain(`after=${encodeURIComponent(cursor ?? '')}`);
        path = match?.[1] ?? null;
      }
    }
    expect(pages).toEqual([['r0', 'r1', 'r2'], ['r3', 'r4', 'r5'], ['r6']]);
  });

  it('filters partly and in any case by tool, customer and text; sorts as asked', async () => {
    const server = await seeded();
    const get = async (query: string) =>
      ids((await server.call('GET', `/v1/requests?${query}`, { as: 'alice' })).json);
    expect(await get('tool=CANCEL')).toEqual(['r6', 'r4', 'r2', 'r0']);
    expect(await get('status=pending&tool=cancel')).toEqual(['r0', 'r2', 'r4', 'r6']);
    expect(await get('status=pending&customer=carol')).toEqual(['r3']);
    expect(await get('status=pending&text=jones')).toEqual(['r3']);
    expect(await get('status=pending&sort=newest&limit=2')).toEqual(['r6', 'r5']);
    expect(await get('status=pending&sort=expiring&limit=2')).toEqual(['r0', 'r1']);
    // The deprecated alias takes the same query and pages the same way.
    const alias = await server.call('GET', '/v1/approvals?status=pending&limit=2', { as: 'alice' });
    expect(ids(alias.json)).toEqual(['r0', 'r1']);
    expect(alias.headers.get('x-next-cursor')).not.toBeNull();
  });

  it('the history pages by latest decision', async () => {
    const server = await seeded();
    await server.store.decide('r2', byPerson('approved', 20));
    await server.store.decide('r5', byPerson('rejected', 30));
    const first = await server.call('GET', '/v1/requests?status=rejected', { as: 'alice' });
    expect(ids(first.json)).toEqual(['r5']);
    const decided = await server.call('GET', '/v1/requests?sort=decided&limit=1', { as: 'alice' });
    expect(ids(decided.json)).toEqual(['r5']);
    const next = await server.call('GET', decided.headers.get('link')?.slice(1).split('>')[0] ?? '', {
      as: 'alice',
    });
    expect(ids(next.json)).toEqual(['r2']);
    expect(next.headers.get('link')).toBeNull();
  });

  it('a cursor is bound to the filters it was handed out under: the same filters page on at any limit, others are 400 INVALID_CURSOR', async () => {
    const server = await seeded();
    const first = await server.call('GET', '/v1/requests?status=pending&tool=cancel&limit=2', {
      as: 'alice',
    });
    expect(ids(first.json)).toEqual(['r0', 'r2']);
    const after = encodeURIComponent(first.headers.get('x-next-cursor') ?? '');
    expect(after).not.toBe('');
    // The same filters (a needle in another case is the same filter), another page size, a count.
    const same = await server.call(
      'GET',
      `/v1/requests?status=pending&tool=CANCEL&limit=1&count=true&after=${after}`,
      { as: 'alice' },
    );
    expect(same.status).toBe(200);
    expect(ids(same.json)).toEqual(['r4']);
    expect(same.headers.get('x-total-count')).toBe('4');
    // The alias lists tool calls only (kind=tool-call): another filter set, so another list.
    const alias = await server.call(
      'GET',
      `/v1/approvals?status=pending&tool=cancel&limit=5&after=${after}`,
      {
        as: 'alice',
      },
    );
    expect(alias.status).toBe(400);
    expect(alias.json.error.code).toBe('INVALID_CURSOR');
    // Its own cursor pages on in it, and in /v1/requests under the same filters.
    const aliasFirst = await server.call('GET', '/v1/approvals?status=pending&tool=cancel&limit=2', {
      as: 'alice',
    });
    const aliasAfter = encodeURIComponent(aliasFirst.headers.get('x-next-cursor') ?? '');
    const aliasNext = await server.call(
      'GET',
      `/v1/approvals?status=pending&tool=cancel&after=${aliasAfter}`,
      {
        as: 'alice',
      },
    );
    expect(ids(aliasNext.json)).toEqual(['r4', 'r6']);
    const asRequests = await server.call(
      'GET',
      `/v1/requests?status=pending&tool=cancel&kind=tool-call&after=${aliasAfter}`,
      { as: 'alice' },
    );
    expect(ids(asRequests.json)).toEqual(['r4', 'r6']);
    // Other filters: once a page of the other list from this one's position, rows skipped silently.
    for (const query of [
      'status=pending',
      'status=pending&tool=place',
      'status=approved&tool=cancel&sort=oldest',
      'tool=cancel&sort=oldest',
      'status=pending&tool=cancel&text=jones',
      'status=pending&tool=cancel&customer=c-200',
      'status=pending&tool=cancel&session=s1',
      'status=pending&tool=cancel&role=manager',
      'status=pending&tool=cancel&kind=tool-call',
    ]) {
      const response = await server.call('GET', `/v1/requests?${query}&after=${after}`, { as: 'alice' });
      expect(response.status, query).toBe(400);
      expect(response.json.error, query).toEqual({
        code: 'INVALID_CURSOR',
        message:
          'This cursor was handed out for other filters. Start again from the first page without a cursor, or send the same filters as the page that handed it out.',
      });
    }
  });

  it('a bad cursor, sort or limit is a 400 with a stable code that says what to do', async () => {
    const server = await seeded();
    const bad = await server.call('GET', '/v1/requests?after=garbage!', { as: 'alice' });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('INVALID_CURSOR');
    expect(bad.json.error.message).toMatch(/leave `after` out to start again/);
    const first = await server.call('GET', '/v1/requests?limit=1', { as: 'alice' });
    const otherSort = await server.call(
      'GET',
      `/v1/requests?limit=1&sort=oldest&after=${first.headers.get('x-next-cursor')}`,
      { as: 'alice' },
    );
    expect(otherSort.json.error.code).toBe('INVALID_CURSOR');
    for (const query of [
      'sort=sideways',
      'limit=0',
      'limit=1001',
      'count=maybe',
      'sort=expiring&status=approved',
      // Needles no backend searches alike: a NUL, or over 1,000 characters.
      'text=%00',
      'text=jones%00x',
      'customer=%00',
      'tool=cancel%00',
      `text=${'x'.repeat(1001)}`,
    ]) {
      const response = await server.call('GET', `/v1/requests?${query}`, { as: 'alice' });
      expect(response.status, query).toBe(400);
      expect(response.json.error.code, query).toBe('INVALID_INPUT');
    }
  });
});

describe('GET /v1/executions pages the ledger with a cursor', () => {
  it('follows X-Next-Cursor to the end; a cursor not handed out is INVALID_CURSOR', async () => {
    const server = testServer();
    await leasedSession(server.store, 's1');
    for (const [index, id] of ['e1', 'e2', 'e3'].entries())
      await server.store.startExecution({
        requestId: id,
        session: 's1',
        callId: `call-${id}`,
        tool: 'refund',
        args: {},
        idempotencyKey: `countersign:${id}`,
        at: at(index),
      });
    const first = await server.call('GET', '/v1/executions?limit=2', { as: 'alice' });
    expect(first.json.map((row: { requestId: string }) => row.requestId)).toEqual(['e1', 'e2']);
    const next = first.headers.get('x-next-cursor');
    expect(first.headers.get('link')).toContain(`after=${next}`);
    const rest = await server.call('GET', `/v1/executions?limit=2&after=${next}`, { as: 'alice' });
    expect(rest.json.map((row: { requestId: string }) => row.requestId)).toEqual(['e3']);
    expect(rest.headers.get('x-next-cursor')).toBeNull();
    const bad = await server.call('GET', '/v1/executions?after=nope!', { as: 'alice' });
    expect(bad.json.error.code).toBe('INVALID_CURSOR');
  });

  it('binds the cursor to session and status: the same filters page on at any limit, others are 400 INVALID_CURSOR', async () => {
    const server = testServer();
    await leasedSession(server.store, 's1');
    await leasedSession(server.store, 's2');
    for (const [index, [id, session]] of [
      ['e1', 's1'],
      ['e2', 's2'],
      ['e3', 's1'],
      ['e4', 's1'],
    ].entries())
      await server.store.startExecution({
        requestId: id ?? '',
        session: session ?? '',
        callId: `call-${id}`,
        tool: 'refund',
        args: {},
        idempotencyKey: `countersign:${id}`,
        at: at(index),
      });
    const requestIds = (json: Array<{ requestId: string }>) => json.map((row) => row.requestId);
    const first = await server.call('GET', '/v1/executions?session=s1&limit=1', { as: 'alice' });
    expect(requestIds(first.json)).toEqual(['e1']);
    const next = first.headers.get('x-next-cursor') ?? '';
    expect(next).not.toBe('');
    const rest = await server.call('GET', `/v1/executions?session=s1&limit=5&after=${next}`, { as: 'alice' });
    expect(requestIds(rest.json)).toEqual(['e3', 'e4']);
    for (const query of ['', 'session=s2&', 'session=s1&status=started&', 'status=started&']) {
      const response = await server.call('GET', `/v1/executions?${query}after=${next}`, { as: 'alice' });
      expect(response.status, query).toBe(400);
      expect(response.json.error.code, query).toBe('INVALID_CURSOR');
      expect(response.json.error.message, query).toMatch(/other filters\. Start again from the first page/);
    }
  });
});
