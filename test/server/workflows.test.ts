import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { type TestServer, testServer, tokens } from './helpers.ts';

const approve = { approved: true, note: 'Approved, photo checked.' };

function refundServer(): TestServer {
  return testServer({
    workflows: [refundWorkflow],
    checkpoints: createMemoryCheckpointStore(),
    // No portRoles: the refund workflow's port declares `role: 'manager'` itself.
  });
}

async function startRefund(server: TestServer, run = 'refund-1040') {
  const started = await server.call('POST', '/v1/runs', {
    as: 'svc',
    body: { workflow: 'refund', run, input: 1040 },
  });
  expect(started.status).toBe(200);
  return started.json as {
    run: string;
    status: string;
    requests: Array<{ id: string; port: string; data: unknown }>;
  };
}

describe('workflow runs over HTTP', () => {
  it('start, read, answer (managers only, once), history; every route is in the OpenAPI document', async () => {
    const server = refundServer();
    const doc = (await server.call('GET', '/v1/openapi.json')).json;
    for (const route of server.app.routes.filter((r) => r.path.startsWith('/v1/') && r.method !== 'ALL')) {
      expect(
        doc.paths[route.path.replace(/:([A-Za-z]+)/g, '{$1}')]?.[route.method.toLowerCase()],
        route.path,
      ).toBeDefined();
    }
    expect(doc.paths['/v1/runs/{run}/requests/{requestId}/response']).toBeDefined();

    const refused = await server.call('POST', '/v1/runs', {
      as: 'alice',
      body: { workflow: 'refund', run: 'r0', input: 1040 },
    });
    expect(refused.status).toBe(403);
    const started = await startRefund(server);
    expect(started).toMatchObject({
      status: 'awaiting_input',
      requests: [{ port: 'manager-approval', data: { orderId: 1040, amount: 35 } }],
    });
    const requestId = started.requests[0]!.id;
    const read = await server.call('GET', '/v1/runs/refund-1040', { as: 'alice' });
    expect(read.json).toMatchObject({ status: 'awaiting_input', requests: [{ id: requestId }] });
    expect((await server.call('GET', '/v1/runs', { as: 'alice' })).json).toMatchObject([
      { run: 'refund-1040', status: 'awaiting_input' },
    ]);

    const path = `/v1/runs/refund-1040/requests/${requestId}/response`;
    const support = await server.call('POST', path, { as: 'alice', body: { response: approve } });
    expect(support.status).toBe(403);
    expect(support.json.error.message).toContain('manager');
    const bad = await server.call('POST', path, { as: 'mia', body: { response: { approved: 'yes' } } });
    expect(bad.status).toBe(400);
    const answered = await server.call('POST', path, { as: 'mia', body: { response: approve } });
    expect(answered.status).toBe(200);
    expect(answered.json).toMatchObject({
      status: 'completed',
      outputs: ['Refund issued: 35.00 for order 1040. Manager note: Approved, photo checked.'],
    });
    const again = await server.call('POST', path, { as: 'customer', body: { response: approve } });
    expect(again.status).toBe(409);
    expect(again.json.error.message).toContain('answered by mia');
    const history = await server.call('GET', '/v1/runs/refund-1040/history', { as: 'alice' });
    expect(history.json.length).toBeGreaterThan(1);
    expect((await server.call('GET', '/v1/runs/nope', { as: 'alice' })).status).toBe(404);
  });

  it('the inbox lists manager-approval requests beside tool calls, in one list, and answers them by form', async () => {
    const server = refundServer();
    await startRefund(server);
    const signIn = async (token: string) => {
      const response = await server.app.request('/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, next: '/' }).toString(),
      });
      return response.headers.get('set-cookie')!.split(';')[0]!;
    };
    const page = async (cookie: string, path = '/') =>
      (await server.app.request(path, { headers: { cookie, accept: 'text/html' } })).text();

    const alice = await signIn(tokens.alice);
    const asSupport = await page(alice);
    // One list and one count for everything that waits: the port request is a card like a tool call's.
    expect(asSupport).toContain('<span class="count" id="pending-count">1</span>');
    expect(asSupport).toContain('data-kind="port"');
    expect(asSupport).toContain('manager-approval');
    expect(asSupport).toContain('&quot;orderId&quot;: 1040');
    expect(asSupport).toContain('this request needs the manager role; alice has support');

    const mia = await signIn(tokens.mia);
    const asManager = await page(mia);
    const action = /action="(\/requests\/[^"]+\/decide)"/.exec(asManager)![1]!;
    const csrf = /name="csrf" value="([^"]+)"/.exec(asManager)![1]!;
    expect(asManager).toContain('name="field:note"');
    const posted = await server.app.request(action, {
      method: 'POST',
      headers: { cookie: mia, 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      body: new URLSearchParams({ csrf, approved: 'true', 'field:note': 'Photo checked.' }).toString(),
    });
    expect(posted.status).toBe(303);
    const after = await page(mia, posted.headers.get('location')!);
    expect(after).toContain(
      'Answered. Run refund-1040 is completed. Output: Refund issued: 35.00 for order 1040.',
    );
    expect(after).toContain('<span class="count" id="pending-count">0</span>');
  });
});

describe('workflow requests expire and are audited over HTTP', () => {
  const kinds = async (server: TestServer, query = '') =>
    ((await server.call('GET', `/v1/audit${query}`, { as: 'alice' })).json as Array<{ kind: string }>).map(
      (entry) => entry.kind,
    );

  it('past expiresAt: off the inbox, 410 EXPIRED with nothing recorded; the watcher expires it, audits it, and the run ends expired', async () => {
    let now = new Date('2026-03-02T09:00:00.000Z');
    const server = testServer({
      workflows: [refundWorkflow],
      checkpoints: createMemoryCheckpointStore(),
      now: () => now,
    });
    const started = (await startRefund(server)) as Awaited<ReturnType<typeof startRefund>> & {
      requests: Array<{ expiresAt: string }>;
    };
    const request = started.requests[0]!;
    expect(request.expiresAt).toBe('2026-03-03T09:00:00.000Z');
    // The checkpoints are in memory: the workflow entries go to the server's own store.
    expect(await kinds(server)).toEqual(['request.raised']);

    const inbox = async () => {
      const page = await server.call('GET', '/', { as: 'mia', headers: { accept: 'text/html' } });
      expect(page.status).toBe(200);
      return page.json as string;
    };
    const before = await inbox();
    expect(before).toContain('manager-approval');
    expect(before).toContain('<time datetime="2026-03-03T09:00:00.000Z" data-countdown>1d 0h</time>');
    now = new Date('2026-03-03T09:00:00.000Z');
    expect(await inbox()).not.toContain('manager-approval');
    const path = `/v1/runs/refund-1040/requests/${request.id}/response`;
    const late = await server.call('POST', path, { as: 'mia', body: { response: approve } });
    expect(late.status).toBe(410);
    expect(late.json.error).toMatchObject({ code: 'EXPIRED', message: expect.stringContaining(request.id) });
    expect(await kinds(server)).toEqual(['request.raised']);
    expect((await server.call('GET', '/v1/runs/refund-1040', { as: 'alice' })).json.status).toBe(
      'awaiting_input',
    );

    await server.watch();
    const run = (await server.call('GET', '/v1/runs/refund-1040', { as: 'alice' })).json;
    expect(run).toMatchObject({
      status: 'expired',
      requests: [],
      outputs: [],
      expired: [{ requestId: request.id, port: 'manager-approval', expiresAt: request.expiresAt }],
    });
    expect((await server.call('GET', '/v1/runs', { as: 'alice' })).json).toMatchObject([
      { run: 'refund-1040', status: 'expired' },
    ]);
    expect(await kinds(server, '?session=wf.refund-1040')).toEqual(['request.raised', 'request.expired']);
    expect((await server.call('GET', '/v1/audit/verify', { as: 'alice' })).json).toMatchObject({ ok: true });

    const again = await server.call('POST', path, { as: 'mia', body: { response: approve } });
    expect(again.status).toBe(410);
    await server.watch();
    expect(await kinds(server)).toEqual(['request.raised', 'request.expired']);
  });

  it('on one SQLite store for agents and runs, the answer and its audit entry are written together', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-wf-http-'));
    const store = createSqliteStore({ path: join(dir, 'store.db') });
    try {
      const server = testServer({ store, workflows: [refundWorkflow] });
      const started = await startRefund(server);
      const requestId = started.requests[0]!.id;
      const path = `/v1/runs/refund-1040/requests/${requestId}/response`;
      expect((await server.call('POST', path, { as: 'mia', body: { response: approve } })).status).toBe(200);
      expect((await server.call('POST', path, { as: 'mia', body: { response: approve } })).status).toBe(409);
      const answered = (await store.listAudit({ session: 'wf.refund-1040' })).filter(
        (entry) => entry.kind === 'request.decided',
      );
      expect(answered).toMatchObject([
        {
          requestId,
          actor: 'mia',
          data: { response: '{"approved":true,"note":"Approved, photo checked."}' },
        },
      ]);
      expect(answered[0]?.at).toBe((await store.getApproval(requestId))?.decision?.at);
      expect((await server.call('GET', '/v1/audit/verify', { as: 'alice' })).json).toMatchObject({
        ok: true,
      });
      await server.close();
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
