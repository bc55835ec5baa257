import { describe, expect, it } from 'vitest';
import { bookstoreAgent } from '../../examples/bookstore/app.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import { bookstore, orderStatus } from '../helpers/bookstore-agent.ts';
import { raiseCancel, testServer } from './helpers.ts';

describe('HTTP API', () => {
  it('describes every /v1 route in /v1/openapi.json', async () => {
    const server = testServer();
    const { status, json } = await server.call('GET', '/v1/openapi.json');
    expect(status).toBe(200);
    const routes = server.app.routes.filter(
      (route) => route.path.startsWith('/v1/') && route.method !== 'ALL',
    );
    expect(routes.length).toBeGreaterThan(10);
    for (const route of routes) {
      const path = route.path.replace(/:([A-Za-z]+)/g, '{$1}');
      expect(json.paths[path]?.[route.method.toLowerCase()], `${route.method} ${route.path}`).toBeDefined();
    }
    expect(
      json.paths['/v1/approvals/{id}/decision'].post.requestBody.content['application/json'].schema,
    ).toMatchObject({
      properties: { approved: { type: 'boolean' }, remember: { enum: ['tool', 'tool-with-args'] } },
      required: ['approved'],
    });
  });

  it('a message from the backend raises a request; listing and showing it give the full call', async () => {
    const server = testServer();
    const id = await raiseCancel(server);
    const list = await server.call('GET', '/v1/approvals?status=pending', { as: 'alice' });
    expect(list.status).toBe(200);
    expect(list.json).toHaveLength(1);
    expect(list.json[0]).toMatchObject({
      id,
      tool: 'cancel_order',
      args: { orderId: 1044 },
      session: 's1',
      customer: 'c-100',
      agent: 'bookstore',
      status: 'pending',
      requiredRole: null,
      standingAllowed: false,
    });
    expect(list.json[0].effect).toContain('Cancel order 1044');
    expect((await server.call('GET', '/v1/approvals?tool=add_to_cart', { as: 'alice' })).json).toEqual([]);
    expect((await server.call('GET', '/v1/approvals?session=other', { as: 'alice' })).json).toEqual([]);
    expect((await server.call('GET', `/v1/approvals/${id}`, { as: 'alice' })).json.id).toBe(id);
    const session = await server.call('GET', '/v1/sessions/s1', { as: 'alice' });
    expect(session.json).toMatchObject({ id: 's1', customer: 'c-100', pending: [{ id }] });
    // The poster is recorded on the message and, as the raiser, on the request it led to.
    expect(session.json.messages[0].message).toEqual({
      role: 'user',
      text: 'Please cancel my order 1044.',
      by: 'backend',
    });
    expect(list.json[0].raisedBy).toBe('backend');
  });

  it('approving runs the stored call once, recorded as the authenticated approver; a retry gets 409 naming them', async () => {
    const server = testServer();
    const id = await raiseCancel(server);
    const approved = await server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(approved.status).toBe(200);
    expect(approved.json).toMatchObject({ status: 'completed' });
    expect(approved.json.reply).toContain('1044');
    expect(await orderStatus(server.store, 1044)).toBe('Cancelled');
    const again = await server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'mia',
      body: { approved: false, reason: 'No.' },
    });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('ALREADY_DECIDED');
    expect(again.json.error.message).toContain('approved by alice');
    const executions = await server.call('GET', '/v1/executions', { as: 'alice' });
    expect(executions.json).toHaveLength(1);
    expect(executions.json[0]).toMatchObject({
      requestId: id,
      status: 'succeeded',
      idempotencyKey: `countersign:${id}`,
    });
  });

  it('arguments, another tool or a name sent with a decision change nothing and are audited', async () => {
    const server = testServer();
    const id = await raiseCancel(server);
    const result = await server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'alice',
      body: { approved: true, args: { orderId: 1043 }, tool: 'refund', by: 'mallory' },
    });
    expect(result.status).toBe(200);
    const shown = await server.call('GET', `/v1/approvals/${id}`, { as: 'alice' });
    expect(shown.json.decision).toMatchObject({ verdict: 'approved', by: 'alice', kind: 'person' });
    const [execution] = (await server.call('GET', '/v1/executions', { as: 'alice' })).json;
    expect(execution.args).toEqual({ orderId: 1044 });
    expect(await orderStatus(server.store, 1043)).toBeUndefined();
    const audit = (await server.call('GET', '/v1/audit', { as: 'alice' })).json as Array<{
      kind: string;
      actor: string;
      data: { fields?: string[]; sent?: string };
    }>;
    const tamper = audit.find((entry) => entry.kind === 'tamper.ignored');
    expect(tamper).toMatchObject({ actor: 'alice', data: { fields: ['args', 'tool', 'sentBy'] } });
    expect(tamper!.data.sent).toContain('1043');
    expect(tamper!.data.sent).toContain('mallory');
    expect(audit.find((entry) => entry.kind === 'request.decided')?.actor).toBe('alice');
    expect((await server.call('GET', '/v1/audit/verify', { as: 'alice' })).json).toMatchObject({ ok: true });
  });

  it('two approvers deciding at once: one wins, the other is told who, the call runs once', async () => {
    for (let round = 0; round < 5; round++) {
      const server = testServer();
      const id = await raiseCancel(server);
      const results = await Promise.all([
        server.call('POST', `/v1/approvals/${id}/decision`, { as: 'alice', body: { approved: true } }),
        server.call('POST', `/v1/approvals/${id}/decision`, {
          as: 'mia',
          body: { approved: false, reason: 'Call first.' },
        }),
      ]);
      const statuses = results.map((result) => result.status).sort();
      expect(statuses).toEqual([200, 409]);
      const loser = results.find((result) => result.status === 409)!;
      const winner = results[0]!.status === 200 ? 'alice' : 'mia';
      expect(loser.json.error.message).toContain(`by ${winner}`);
      const executions = (await server.call('GET', '/v1/executions', { as: 'alice' })).json;
      expect(executions).toHaveLength(winner === 'alice' ? 1 : 0);
    }
  });

  it('rejecting sends the reason to the model and runs nothing', async () => {
    const server = testServer();
    const id = await raiseCancel(server);
    const rejected = await server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'alice',
      body: { approved: false, reason: 'Support will call you first.' },
    });
    expect(rejected.status).toBe(200);
    expect(rejected.json.reply).toContain('Support will call you first.');
    expect(await orderStatus(server.store, 1044)).toBeUndefined();
    const history = await server.call('GET', '/v1/approvals?status=rejected', { as: 'alice' });
    expect(history.json[0].decision).toMatchObject({ by: 'alice', reason: 'Support will call you first.' });
  });

  it('refuses bad bodies: malformed JSON, not JSON, wrong types, too large', async () => {
    const server = testServer({ maxBodyBytes: 1024 });
    const id = await raiseCancel(server);
    const path = `/v1/approvals/${id}/decision`;
    const malformed = await server.call('POST', path, { as: 'alice', raw: '{"approved": tru' });
    expect(malformed.status).toBe(400);
    expect(malformed.json).toEqual({
      error: { code: 'INVALID_INPUT', message: 'The request body is not valid JSON.' },
    });
    const form = await server.call('POST', path, {
      as: 'alice',
      raw: 'approved=true',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(400);
    const typed = await server.call('POST', path, { as: 'alice', body: { approved: 'yes' } });
    expect(typed.status).toBe(400);
    expect(typed.json.error.code).toBe('INVALID_INPUT');
    const remember = await server.call('POST', path, {
      as: 'alice',
      body: { approved: true, remember: 'forever' },
    });
    expect(remember.status).toBe(400);
    const large = await server.call('POST', path, {
      as: 'alice',
      body: { approved: true, reason: 'x'.repeat(5000) },
    });
    expect(large.status).toBe(413);
    expect(large.json.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect((await server.call('GET', `/v1/approvals/${id}`, { as: 'alice' })).json.status).toBe('pending');
    const unknown = await server.call('GET', '/v1/approvals/apr_nope', { as: 'alice' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('NOT_FOUND');
    expect((await server.call('GET', '/v1/nothing', { as: 'alice' })).status).toBe(404);
    expect((await server.call('GET', '/v1/approvals?status=done', { as: 'alice' })).status).toBe(400);
  });

  it('a tool that needs a role: a support approver is refused, a manager approves', async () => {
    const server = testServer();
    const turn = await server.call('POST', '/v1/sessions/r1/messages', {
      as: 'svc',
      body: { text: 'Refund me please.', user: 'c-200', agent: 'refund-desk' },
    });
    const id = turn.json.approvals[0].id;
    expect(turn.json.approvals[0]).toMatchObject({ tool: 'refund', requiredRole: 'manager' });
    const refused = await server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatchObject({ code: 'FORBIDDEN' });
    expect(refused.json.error.message).toContain('manager');
    const approved = await server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'mia',
      body: { approved: true },
    });
    expect(approved.status).toBe(200);
    expect(approved.json.reply).toBe('Refund issued.');
  });

  it('nobody decides a request raised in their own session', async () => {
    const server = testServer();
    const id = await raiseCancel(server);
    const own = await server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'customer',
      body: { approved: true },
    });
    expect(own.status).toBe(403);
    expect(own.json.error.code).toBe('FORBIDDEN');
    expect((await server.call('GET', `/v1/approvals/${id}`, { as: 'alice' })).json.status).toBe('pending');
  });

  it('posting messages needs the service role', async () => {
    const server = testServer();
    const refused = await server.call('POST', '/v1/sessions/s1/messages', {
      as: 'alice',
      body: { text: 'Please cancel my order 1044.', user: 'c-100' },
    });
    expect(refused.status).toBe(403);
    const unknownField = await server.call('POST', '/v1/sessions/s1/messages', {
      as: 'svc',
      body: { text: 'hi', user: 'c-100', principal: 'c-200' },
    });
    expect(unknownField.status).toBe(400);
    const otherCustomer = await raiseCancel(server).then(() =>
      server.call('POST', '/v1/sessions/s1/messages', { as: 'svc', body: { text: 'hi', user: 'c-200' } }),
    );
    expect(otherCustomer.status).toBe(403);
  });

  it('"always for this session" creates a rule where the tool allows it; it can be listed and revoked', async () => {
    const server = testServer();
    const kitchen = await server.call('POST', '/v1/sessions/k1/messages', {
      as: 'svc',
      body: { text: 'Add 12 eggs to the shopping list.', user: 'c-100', agent: 'kitchen' },
    });
    const id = kitchen.json.approvals[0].id;
    expect(kitchen.json.approvals[0].standingAllowed).toBe(true);
    const approved = await server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'alice',
      body: { approved: true, remember: 'tool' },
    });
    expect(approved.status).toBe(200);
    const rules = await server.call('GET', '/v1/rules?session=k1', { as: 'alice' });
    expect(rules.json).toHaveLength(1);
    expect(rules.json[0]).toMatchObject({ tool: 'add_to_shopping_list', createdBy: 'alice', argsHash: null });
    const next = await server.call('POST', '/v1/sessions/k1/messages', {
      as: 'svc',
      body: { text: 'Add some milk to the shopping list.', user: 'c-100' },
    });
    expect(next.json.status).toBe('completed');
    const revoked = await server.call('POST', `/v1/rules/${rules.json[0].id}/revoke`, { as: 'mia' });
    expect(revoked.json).toMatchObject({ revokedBy: 'mia' });
    expect((await server.call('GET', '/v1/rules?session=k1', { as: 'alice' })).json).toEqual([]);
    const asked = await server.call('POST', '/v1/sessions/k1/messages', {
      as: 'svc',
      body: { text: 'Add some bread to the shopping list.', user: 'c-100' },
    });
    expect(asked.json.status).toBe('awaiting_approval');

    const cancel = await raiseCancel(server, 's2');
    const noStanding = await server.call('POST', `/v1/approvals/${cancel}/decision`, {
      as: 'alice',
      body: { approved: true, remember: 'tool' },
    });
    expect(noStanding.status).toBe(403);
  });

  it('an expired request answers 410 and cannot be approved', async () => {
    let now = new Date('2026-01-01T10:00:00Z');
    const { agent } = bookstore({ now: () => now, approvalTtl: '1m' });
    const server = testServer({ agents: [agent], now: () => now });
    const id = await raiseCancel(server);
    now = new Date('2026-01-01T10:05:00Z');
    const late = await server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(late.status).toBe(410);
    expect(late.json.error.code).toBe('EXPIRED');
    expect((await server.call('GET', '/v1/approvals?status=pending', { as: 'alice' })).json).toEqual([]);
    expect((await server.call('GET', '/v1/executions', { as: 'alice' })).json).toEqual([]);
  });

  it('streams events: a new request and its decision arrive on /v1/events', async () => {
    const server = testServer();
    const response = await server.app.request('/v1/events', {
      headers: { authorization: `Bearer ${'mia-token-0123456789abc'}` },
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${needle}`);
        text += decoder.decode(value);
      }
    };
    await readUntil('event: ready');
    const id = await raiseCancel(server);
    await readUntil('event: approval.requested');
    expect(text).toContain(id);
    await server.call('POST', `/v1/approvals/${id}/decision`, { as: 'alice', body: { approved: true } });
    await readUntil('event: approval.decided');
    await readUntil('event: turn.finished');
    await reader.cancel();
    await server.close();
  });

  it('a model that fails after the decision: 502 MODEL_ERROR, the decision and the execution stand, resume continues', async () => {
    const demo = createDemoModel();
    let down = false;
    const flaky = {
      ...demo,
      async doGenerate(options: Parameters<typeof demo.doGenerate>[0]) {
        if (down) throw new Error('connection refused');
        return demo.doGenerate(options);
      },
    };
    const server = testServer({ agents: [bookstoreAgent.with({ model: flaky })] });
    const id = await raiseCancel(server);
    down = true;
    const decided = await server.call('POST', `/v1/approvals/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(decided.status).toBe(502);
    expect(decided.json.error.code).toBe('MODEL_ERROR');
    expect((await server.call('GET', `/v1/approvals/${id}`, { as: 'alice' })).json.decision.by).toBe('alice');
    expect((await server.call('GET', '/v1/executions', { as: 'alice' })).json).toHaveLength(1);
    down = false;
    const resumed = await server.call('POST', '/v1/sessions/s1/resume', { as: 'alice' });
    expect(resumed.json).toMatchObject({ status: 'completed' });
    expect(resumed.json.reply).toContain('1044');
  });
});
