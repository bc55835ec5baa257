import { describe, expect, it } from 'vitest';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
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

  it('the inbox lists manager-approval requests after tool calls and answers them by form', async () => {
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
    expect(asSupport).toContain('Workflow requests');
    expect(asSupport).toContain('manager-approval');
    expect(asSupport).toContain('&quot;orderId&quot;: 1040');
    expect(asSupport).toContain('needs the manager role');

    const mia = await signIn(tokens.mia);
    const asManager = await page(mia);
    const action = /action="(\/runs\/refund-1040\/requests\/[^"]+\/respond)"/.exec(asManager)![1]!;
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
    expect(after).not.toContain('Workflow requests');
  });
});
