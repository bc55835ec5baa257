import { describe, expect, it } from 'vitest';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { encodeKeysetCursor } from '../../src/store/keyset-cursor.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { testServer } from './helpers.ts';

/** GET /v1/runs is a keyset page like GET /v1/requests: the body the array, the cursor in headers. */
describe('GET /v1/runs pages with a cursor', () => {
  async function seeded() {
    let clock = Date.UTC(2030, 0, 1);
    const server = testServer({
      workflows: [refundWorkflow],
      checkpoints: createMemoryCheckpointStore(),
      now: () => new Date(clock),
    });
    const users = ['c-100', 'c-200', undefined, 'c-100', 'c-300'];
    for (const [index, user] of users.entries()) {
      clock += 1000;
      const started = await server.call('POST', '/v1/runs', {
        as: 'svc',
        body: { workflow: 'refund', run: `refund-${index}`, input: 1040, ...(user ? { user } : {}) },
      });
      expect(started.status).toBe(200);
    }
    return server;
  }

  const runs = (json: Array<{ run: string }>) => json.map((item) => item.run);

  it('follows Link rel="next" newest first to the end; the last page has none; each run names its customer', async () => {
    const server = await seeded();
    let path: string | null = '/v1/runs?limit=2&count=true';
    const pages: string[][] = [];
    while (path !== null) {
      const response = await server.call('GET', path, { as: 'alice' });
      expect(response.status).toBe(200);
      expect(response.headers.get('x-total-count')).toBe('5');
      pages.push(runs(response.json));
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
    expect(pages).toEqual([['refund-4', 'refund-3'], ['refund-2', 'refund-1'], ['refund-0']]);
    const all = (await server.call('GET', '/v1/runs', { as: 'alice' })).json;
    expect(all.map((run: { customer: string | null }) => run.customer)).toEqual([
      'c-300',
      'c-100',
      null,
      'c-200',
      'c-100',
    ]);
    expect(all[0]).toMatchObject({ workflow: 'refund', status: 'awaiting_input', version: 1 });
  });

  it('filters exactly by customer, status and workflow, and sorts oldest first when asked', async () => {
    const server = await seeded();
    const get = async (query: string) =>
      runs((await server.call('GET', `/v1/runs?${query}`, { as: 'alice' })).json);
    expect(await get('customer=c-100')).toEqual(['refund-3', 'refund-0']);
    expect(await get('customer=C-100')).toEqual([]);
    expect(await get('customer=c-100&sort=oldest')).toEqual(['refund-0', 'refund-3']);
    expect(await get('status=awaiting_input&workflow=refund&limit=1')).toEqual(['refund-4']);
    expect(await get('status=completed')).toEqual([]);
    expect(await get('workflow=exchange')).toEqual([]);
  });

  it('a cursor is bound to the filters it was handed out under: the same filters page on at any limit, others are 400 INVALID_CURSOR', async () => {
    const server = await seeded();
    const first = await server.call('GET', '/v1/runs?customer=c-100&limit=1', { as: 'alice' });
    expect(runs(first.json)).toEqual(['refund-3']);
    const next = first.headers.get('x-next-cursor') ?? '';
    expect(next).not.toBe('');
    const rest = await server.call('GET', `/v1/runs?customer=c-100&limit=5&count=true&after=${next}`, {
      as: 'alice',
    });
    expect(runs(rest.json)).toEqual(['refund-0']);
    expect(rest.headers.get('x-total-count')).toBe('2');
    for (const query of ['', 'customer=c-200&', 'customer=c-100&status=awaiting_input&', 'workflow=c-100&']) {
      const response = await server.call('GET', `/v1/runs?${query}after=${next}`, { as: 'alice' });
      expect(response.status, query).toBe(400);
      expect(response.json.error, query).toEqual({
        code: 'INVALID_CURSOR',
        message:
          'This cursor was handed out for other filters. Start again from the first page without a cursor, or send the same filters as the page that handed it out.',
      });
    }
  });

  it('a cursor not handed out, of the other sort, or of the request list is 400 INVALID_CURSOR; bad filters 400 INVALID_INPUT', async () => {
    const server = await seeded();
    const code = async (query: string) => {
      const response = await server.call('GET', `/v1/runs?${query}`, { as: 'alice' });
      expect(response.status).toBe(400);
      return response.json.error.code;
    };
    const first = await server.call('GET', '/v1/runs?limit=1', { as: 'alice' });
    const next = first.headers.get('x-next-cursor') ?? '';
    expect(await code(`after=${next}&sort=oldest`)).toBe('INVALID_CURSOR');
    expect(await code('after=garbage!')).toBe('INVALID_CURSOR');
    const requests = await server.call('GET', '/v1/requests?limit=1', { as: 'alice' });
    expect(await code(`after=${requests.headers.get('x-next-cursor')}`)).toBe('INVALID_CURSOR');
    // Nor does the request list take a cursor of the runs.
    const crossed = await server.call('GET', `/v1/requests?sort=newest&after=${next}`, { as: 'alice' });
    expect(crossed.status).toBe(400);
    expect(crossed.json.error.code).toBe('INVALID_CURSOR');
    expect(await code('status=done')).toBe('INVALID_INPUT');
    expect(await code('sort=updated')).toBe('INVALID_INPUT');
    expect(await code('limit=0')).toBe('INVALID_INPUT');
    expect(await code('limit=1001')).toBe('INVALID_INPUT');
    expect(await code('count=yes')).toBe('INVALID_INPUT');
    expect((await server.call('GET', '/v1/runs')).status).toBe(401);
  });

  it('odd limits and cursors are 400 with a stable code, never a 500 or another page; odd customer ids match exactly', async () => {
    const server = await seeded();
    const get = (query: string) => server.call('GET', `/v1/runs?${query}`, { as: 'alice' });
    for (const limit of [
      '-1',
      'abc',
      '1.5',
      '1e2',
      '0x10',
      '%207',
      '7%20',
      '10000000000000000000',
      'Infinity',
    ])
      expect({ limit, ...(await get(`limit=${limit}`)).json.error }).toMatchObject({
        limit,
        code: 'INVALID_INPUT',
      });
    const nul = encodeKeysetCursor('runs.newest', '2030', 'x\u0000', {});
    const first = await get('limit=1');
    const next = first.headers.get('x-next-cursor') ?? '';
    for (const after of [
      nul,
      next.slice(0, -3),
      `${next}%3D%3D`,
      encodeURIComponent('[1]'),
      'a'.repeat(5000),
    ])
      expect({ after, status: (await get(`after=${after}`)).status }).toEqual({ after, status: 400 });
    // A cursor of the same list under other filters is refused: it was once read as a position
    // in the same order, a page of the other list that skipped rows without a word.
    const filtered = await get(`customer=c-100&after=${next}`);
    expect(filtered.status).toBe(400);
    expect(filtered.json.error.code).toBe('INVALID_CURSOR');
    for (const customer of ['../c-100', 'c-100/..', '%2E%2E', '%C3%BC', 'c%00']) {
      const response = await get(`customer=${customer}`);
      expect({
        customer,
        status: response.status,
        runs: response.status === 200 ? response.json : null,
      }).toEqual({
        customer,
        status: customer === 'c%00' ? 400 : 200,
        runs: customer === 'c%00' ? null : [],
      });
    }
  });
});
