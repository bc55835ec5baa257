import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { eventsOf } from '../../src/events/from-audit.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { type TestServer, testServer, tokens } from './helpers.ts';

/**
 * The one request resource: an agent's tool call and a workflow's port request are listed,
 * read and decided the same way, on a store that keeps both (SQLite) and on runs kept apart
 * from the agents (a memory checkpoint store beside a memory store).
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const setups: Array<[string, () => TestServer]> = [
  [
    'one SQLite store for agents and runs',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'countersign-requests-'));
      dirs.push(dir);
      const store = createSqliteStore({ path: join(dir, 'store.db') });
      return testServer({ store, workflows: [refundWorkflow], checkpoints: store });
    },
  ],
  [
    'runs kept apart from the agents (memory)',
    () => testServer({ workflows: [refundWorkflow], checkpoints: createMemoryCheckpointStore() }),
  ],
];

async function raiseBoth(server: TestServer) {
  const chat = await server.call('POST', '/v1/sessions/s1/messages', {
    as: 'svc',
    body: { text: 'Please cancel my order 1044.', user: 'c-100' },
  });
  expect(chat.status).toBe(200);
  const run = await server.call('POST', '/v1/runs', {
    as: 'svc',
    body: { workflow: 'refund', run: 'refund-1040', input: 1040, user: 'c-300' },
  });
  expect(run.status).toBe(200);
  return { toolCall: chat.json.approvals[0].id as string, port: run.json.requests[0].id as string };
}

describe.each(setups)('the one request resource (%s)', (_name, make) => {
  it('lists both kinds in one list, filters by kind and run, and reads either by id', async () => {
    const server = make();
    const { toolCall, port } = await raiseBoth(server);
    const all = await server.call('GET', '/v1/requests?status=pending', { as: 'alice' });
    expect(all.status).toBe(200);
    expect(all.json.map((r: { id: string; kind: string }) => [r.id, r.kind])).toEqual([
      [toolCall, 'tool-call'],
      [port, 'port'],
    ]);
    const ports = await server.call('GET', '/v1/requests?kind=port', { as: 'alice' });
    expect(ports.json).toHaveLength(1);
    expect(ports.json[0]).toMatchObject({
      id: port,
      kind: 'port',
      run: 'refund-1040',
      agent: 'refund',
      tool: 'manager-approval',
      args: { orderId: 1040, amount: 35 },
      customer: 'c-300',
      raisedBy: 'backend',
      requiredRole: 'manager',
      status: 'pending',
      integrity: 'ok',
    });
    expect(ports.json[0].effect).not.toBe('');
    expect(ports.json[0].responseSchema.properties.approved).toMatchObject({ type: 'boolean' });
    expect((await server.call('GET', '/v1/requests?run=refund-1040', { as: 'alice' })).json).toHaveLength(1);
    const one = await server.call('GET', `/v1/requests/${toolCall}`, { as: 'alice' });
    expect(one.json).toMatchObject({
      id: toolCall,
      kind: 'tool-call',
      customer: 'c-100',
      responseSchema: null,
    });
    const bad = await server.call('GET', '/v1/requests?kind=approval', { as: 'alice' });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toContain('tool-call or port');
    expect((await server.call('GET', '/v1/requests/apr_nope', { as: 'alice' })).status).toBe(404);
  });

  it('decides a tool call and answers a port request through one route; each kind refuses the other shape', async () => {
    const server = make();
    const { toolCall, port } = await raiseBoth(server);
    const path = (id: string) => `/v1/requests/${id}/decision`;

    // A tool call takes a verdict, never an answer; a refused shape records nothing.
    const wrongShape = await server.call('POST', path(toolCall), { as: 'alice', body: { response: 1 } });
    expect(wrongShape.status).toBe(400);
    expect((await server.call('GET', `/v1/requests/${toolCall}`, { as: 'alice' })).json.status).toBe(
      'pending',
    );
    // A sent `by` or call is never taken: the decider is the token's, and the extras are audited.
    const decided = await server.call('POST', path(toolCall), {
      as: 'alice',
      body: { approved: true, by: 'mallory', args: { orderId: 1 } },
    });
    expect(decided.status).toBe(200);
    expect(decided.json.request).toMatchObject({ id: toolCall, status: 'approved' });
    expect(decided.json.turn.status).toBe('completed');
    expect(decided.json.run).toBeNull();
    expect(decided.json.request.decision.by).toBe('alice');
    const audit = (await server.call('GET', '/v1/audit', { as: 'alice' })).json as Array<{
      kind: string;
      data: { fields?: string[] };
    }>;
    expect(audit.find((entry) => entry.kind === 'tamper.ignored')?.data.fields).toEqual(['args', 'sentBy']);

    // The older tool-call route refuses a port request before anything is recorded.
    const alias = await server.call('POST', `/v1/approvals/${port}/decision`, {
      as: 'mia',
      body: { approved: true },
    });
    expect(alias.status).toBe(400);
    expect(alias.json.error.message).toContain('workflow request');
    // The customer the run acts for, and a support approver without the port's role, are refused.
    const support = await server.call('POST', path(port), {
      as: 'alice',
      body: { approved: true, reason: 'Looks fine.' },
    });
    expect(support.status).toBe(403);
    expect((await server.call('GET', `/v1/requests/${port}`, { as: 'alice' })).json.status).toBe('pending');
    // An approval-shaped port takes a verdict too: the reason lands in its one text field.
    const answered = await server.call('POST', path(port), {
      as: 'mia',
      body: { approved: true, reason: 'Photo checked.' },
    });
    expect(answered.status).toBe(200);
    expect(answered.json.request).toMatchObject({
      id: port,
      status: 'answered',
      decision: { by: 'mia', response: { approved: true, note: 'Photo checked.' } },
    });
    expect(answered.json.turn).toBeNull();
    expect(answered.json.run).toMatchObject({
      status: 'completed',
      outputs: ['Refund issued: 35.00 for order 1040. Manager note: Photo checked.'],
    });
    const again = await server.call('POST', path(port), {
      as: 'mia',
      body: { response: { approved: false, note: 'x' } },
    });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('ALREADY_DECIDED');
    expect((await server.call('GET', '/v1/requests?status=pending', { as: 'alice' })).json).toEqual([]);
  });

  it('both kinds are announced live from their audit entries, with one card shape', async () => {
    const server = make();
    const { toolCall, port } = await raiseBoth(server);
    const entries = (await server.call('GET', '/v1/audit', { as: 'alice' })).json;
    const announced = entries
      .flatMap(eventsOf)
      .filter((event: { type: string }) => event.type === 'approval.requested')
      .map(
        (event: { approval: { id: string; kind: string; tool: string; customer: string | null } }) =>
          event.approval,
      );
    expect(announced).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: toolCall, kind: 'tool-call', tool: 'cancel_order' }),
        expect.objectContaining({ id: port, kind: 'port', tool: 'manager-approval', customer: 'c-300' }),
      ]),
    );
    await server.call('POST', `/v1/requests/${port}/decision`, {
      as: 'mia',
      body: { response: { approved: true, note: 'ok' } },
    });
    const after = (await server.call('GET', '/v1/audit', { as: 'alice' })).json.flatMap(eventsOf);
    expect(after).toContainEqual(
      expect.objectContaining({ type: 'approval.decided', requestId: port, verdict: 'answered', by: 'mia' }),
    );
  });

  it('the older run route answers only its own run’s requests', async () => {
    const server = make();
    const { port, toolCall } = await raiseBoth(server);
    const elsewhere = await server.call('POST', `/v1/runs/other-run/requests/${port}/response`, {
      as: 'mia',
      body: { response: { approved: true, note: 'ok' } },
    });
    expect(elsewhere.status).toBe(404);
    const notAPort = await server.call('POST', `/v1/runs/refund-1040/requests/${toolCall}/response`, {
      as: 'mia',
      body: { response: { approved: true, note: 'ok' } },
    });
    expect(notAPort.status).toBe(404);
    const own = await server.call('POST', `/v1/runs/refund-1040/requests/${port}/response`, {
      as: 'mia',
      body: { response: { approved: true, note: 'ok' } },
    });
    expect(own.status).toBe(200);
    expect(own.json.status).toBe('completed');
  });

  it('the inbox shows both in one list with one count, and its one form handler decides either', async () => {
    const server = make();
    const { toolCall, port } = await raiseBoth(server);
    const signIn = async (token: string) => {
      const response = await server.app.request('/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, next: '/' }).toString(),
      });
      return response.headers.get('set-cookie')!.split(';')[0]!;
    };
    const mia = await signIn(tokens.mia);
    const page = async (path = '/') =>
      (await server.app.request(path, { headers: { cookie: mia, accept: 'text/html' } })).text();
    const list = await page();
    expect(list).toContain('<span class="count" id="pending-count">2</span>');
    expect(list.indexOf(`id="${toolCall}"`)).toBeLessThan(list.indexOf(`id="${port}"`));
    const csrf = /name="csrf" value="([^"]+)"/.exec(list)![1]!;
    const post = (path: string, form: Record<string, string>) =>
      server.app.request(path, {
        method: 'POST',
        headers: { cookie: mia, 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
        body: new URLSearchParams({ csrf, ...form }).toString(),
      });
    expect(await page(`/inbox/pane/${port}`)).toContain('name="field:note"');
    expect(await page(`/requests/${port}`)).toContain('manager-approval');
    const answered = await post(`/requests/${port}/decide`, { approved: 'true', 'field:note': 'Checked.' });
    expect(answered.status).toBe(303);
    expect(await page(answered.headers.get('location')!)).toContain(
      'Answered. Run refund-1040 is completed.',
    );
    const approved = await post(`/requests/${toolCall}/decide`, { verdict: 'approve' });
    expect(await page(approved.headers.get('location')!)).toContain('Approved.');
    expect(await page()).toContain('<span class="count" id="pending-count">0</span>');
  });
});
