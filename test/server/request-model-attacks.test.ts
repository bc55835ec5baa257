import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { supportWorkflow } from '../../examples/bookstore/app.ts';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { verifyAuditChain } from '../../src/core/audit.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import type { ServerOptions } from '../../src/server/create-server.ts';
import { createSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { orderStatus } from '../helpers/bookstore-agent.ts';
import { type TestServer, testServer, tokens } from './helpers.ts';

/**
 * A hostile user against the one request model (issue 11): the raiser, the customer and an
 * approver without the port's role on every decision route; the wrong kind's shape; smuggled
 * fields; races; expiry; another run's alias; rows and checkpoints edited on disk; bad bodies.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

interface Setup {
  server: TestServer;
  store: SqliteStore;
  edit(sql: string): number;
  clock: { at: Date };
}

function setup(overrides: Pick<Partial<ServerOptions>, 'model'> = {}): Setup {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-attacks-'));
  const path = join(dir, 'store.db');
  const store = createSqliteStore({ path });
  const clock = { at: new Date() };
  const server = testServer({
    store,
    checkpoints: store,
    workflows: [refundWorkflow, supportWorkflow],
    now: () => clock.at,
    ...overrides,
  });
  cleanups.push(async () => {
    await server.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const edit = (sql: string) => {
    const db = new DatabaseSync(path);
    try {
      return Number(db.prepare(sql).run().changes);
    } finally {
      db.close();
    }
  };
  return { server, store, edit, clock };
}

/** backend starts refund-1040 for customer c-100; returns the port request id. */
async function refundRun(server: TestServer, run = 'refund-1040', order = 1040): Promise<string> {
  const started = await server.call('POST', '/v1/runs', {
    as: 'svc',
    body: { workflow: 'refund', run, input: order, user: 'c-100' },
  });
  expect(started.status).toBe(200);
  return started.json.requests[0].id as string;
}

/** backend posts c-100's message; returns the tool call id. */
async function toolCall(server: TestServer, session = 's1'): Promise<string> {
  const chat = await server.call('POST', `/v1/sessions/${session}/messages`, {
    as: 'svc',
    body: { text: 'Please cancel my order 1044.', user: 'c-100', agent: 'bookstore' },
  });
  expect(chat.status).toBe(200);
  return chat.json.approvals[0].id as string;
}

const refunded = (store: SqliteStore) => store.getState('bookstore', 'refund:1040');
const statusOf = async (server: TestServer, id: string) =>
  (await server.call('GET', `/v1/requests/${id}`, { as: 'alice' })).json.status as string;

const answer = { response: { approved: true, note: 'ok' } };

/** Signs in to the inbox with `token`; `post` sends a form with the page's CSRF token and returns the page shown after. */
async function inboxAs(server: TestServer, token: string, request: string) {
  const login = await server.app.request('/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, next: '/' }).toString(),
  });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const html = async (path: string) =>
    (await server.app.request(path, { headers: { cookie, accept: 'text/html' } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(await html(`/requests/${request}`))?.[1];
  expect(csrf).toBeDefined();
  return {
    async post(path: string, form: Record<string, string>): Promise<string> {
      const posted = await server.app.request(path, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
        body: new URLSearchParams({ csrf: csrf!, ...form }).toString(),
      });
      const location = posted.headers.get('location');
      return location ? html(location) : posted.text();
    },
  };
}

describe('who may answer a port request, on every HTTP route', () => {
  it('the raiser, the customer and an approver without the role are refused on /v1/requests and both aliases', async () => {
    const { server, store } = setup();
    const port = await refundRun(server);
    const routes: Array<[string, unknown]> = [
      [`/v1/requests/${port}/decision`, answer],
      [`/v1/requests/${port}/decision`, { approved: true, reason: 'fine' }],
      [`/v1/runs/refund-1040/requests/${port}/response`, answer],
      [`/v1/approvals/${port}/decision`, { approved: true }],
    ];
    for (const [path, body] of routes) {
      for (const as of ['svc', 'customer', 'alice'] as const) {
        const refused = await server.call('POST', path, { as, body });
        expect(refused.status, `${as} on ${path}`).toBeGreaterThanOrEqual(400);
        expect(refused.status, `${as} on ${path}`).toBeLessThan(500);
      }
    }
    expect(await statusOf(server, port)).toBe('pending');
    expect(await refunded(store)).toBeUndefined();
  });

  it('the raiser and the customer are refused on a tool call too, on both routes', async () => {
    const { server } = setup();
    const id = await toolCall(server);
    for (const path of [`/v1/requests/${id}/decision`, `/v1/approvals/${id}/decision`]) {
      for (const as of ['svc', 'customer'] as const) {
        const refused = await server.call('POST', path, { as, body: { approved: true } });
        expect(refused.status, `${as} on ${path}`).toBe(403);
      }
    }
    expect(await statusOf(server, id)).toBe('pending');
  });

  it('the inbox form (with a valid CSRF token) refuses the customer and an approver without the role', async () => {
    const { server, store } = setup();
    const port = await refundRun(server);
    for (const token of [tokens.customer, tokens.alice]) {
      const form = await inboxAs(server, token, port);
      const shown = await form.post(`/requests/${port}/decide`, { approved: 'true', 'field:note': 'mine' });
      // In the approver's words, without the API's code.
      expect(shown).toContain('You cannot decide this one:');
      expect(shown).not.toContain('Answered.');
    }
    expect(await statusOf(server, port)).toBe('pending');
    expect(await refunded(store)).toBeUndefined();
  });
});

describe('shapes, smuggling, races, expiry', () => {
  it('a verdict on a non-approval-shaped answer, an answer on a tool call, and a remember on a port change nothing', async () => {
    const { server } = setup();
    const id = await toolCall(server);
    const onTool = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'alice',
      body: { response: { approved: true } },
    });
    expect(onTool.status).toBe(400);
    expect(await statusOf(server, id)).toBe('pending');
  });

  it('an answer that smuggles fields the port does not take is refused, on the API and the inbox form', async () => {
    const { server, store } = setup();
    const port = await refundRun(server);
    const smuggled = await server.call('POST', `/v1/requests/${port}/decision`, {
      as: 'mia',
      body: { response: { approved: true, note: 'ok', amount: 3500, orderId: 1 } },
    });
    expect(smuggled.status).toBe(400);
    expect(smuggled.json.error.message).toContain('amount, orderId');
    // Names every object inherits are fields the port does not take too.
    const inherited = await server.call('POST', `/v1/requests/${port}/decision`, {
      as: 'mia',
      raw: '{"response": {"approved": true, "note": "ok", "constructor": "3500", "__proto__": {"x": 1}}}',
    });
    expect(inherited.status).toBe(400);
    expect(inherited.json.error.message).toContain('constructor');
    const form = await inboxAs(server, tokens.mia, port);
    const shown = await form.post(`/requests/${port}/decide`, {
      approved: 'true',
      'field:note': 'ok',
      'field:amount': '3500',
    });
    expect(shown).toContain('does not take: amount');
    expect(await statusOf(server, port)).toBe('pending');
    expect(JSON.stringify(await store.listAudit())).not.toContain('3500');
    expect(await refunded(store)).toBeUndefined();
  });

  it('remember, or a field beside the verdict, on a port is refused, not silently dropped', async () => {
    const { server } = setup();
    const port = await refundRun(server);
    const remembered = await server.call('POST', `/v1/requests/${port}/decision`, {
      as: 'mia',
      body: { approved: true, reason: 'ok', remember: 'tool' },
    });
    expect(remembered.status).toBe(400);
    expect(remembered.json.error.message).toContain('remember applies to tool calls only');
    const extra = await server.call('POST', `/v1/requests/${port}/decision`, {
      as: 'mia',
      body: { approved: true, note: 'my note', amount: 3500 },
    });
    expect(extra.status).toBe(400);
    expect(extra.json.error.message).toContain('takes no note, amount');
    expect(await statusOf(server, port)).toBe('pending');
  });

  it('two decisions racing: one wins, the other is ALREADY_DECIDED, the refund happens once', async () => {
    const { server, store } = setup();
    const port = await refundRun(server);
    const [a, b] = await Promise.all([
      server.call('POST', `/v1/requests/${port}/decision`, { as: 'mia', body: answer }),
      server.call('POST', `/v1/runs/refund-1040/requests/${port}/response`, {
        as: 'mia',
        body: { response: { approved: false, note: 'no' } },
      }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    // The winner's answer ran, once (an approval refunds; a decline leaves nothing).
    expect(await refunded(store)).toEqual(a.status === 200 ? expect.anything() : undefined);
    const audit = await store.listAudit({ session: 'wf.refund-1040' });
    expect(audit.filter((entry) => entry.kind === 'request.decided')).toHaveLength(1);
    expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
  });

  it('at and after expiresAt a port request cannot be answered', async () => {
    const { server, store, clock } = setup();
    const port = await refundRun(server);
    const row = await store.getApproval(port);
    clock.at = new Date(row!.expiresAt);
    const atExpiry = await server.call('POST', `/v1/requests/${port}/decision`, { as: 'mia', body: answer });
    expect(atExpiry.status).toBe(410);
    clock.at = new Date(Date.parse(row!.expiresAt) + 1000);
    const after = await server.call('POST', `/v1/runs/refund-1040/requests/${port}/response`, {
      as: 'mia',
      body: answer,
    });
    expect(after.status).toBe(410);
    const form = await inboxAs(server, tokens.mia, port);
    const shown = await form.post(`/requests/${port}/decide`, { approved: 'true', 'field:note': 'late' });
    expect(shown).toContain('Too late: this request expired at');
    expect(await statusOf(server, port)).not.toBe('answered');
    expect(await refunded(store)).toBeUndefined();
  });

  it("a request of one run is not answered through another run's alias", async () => {
    const { server, store } = setup();
    const port = await refundRun(server);
    await refundRun(server, 'refund-1043', 1043);
    const other = await server.call('POST', `/v1/runs/refund-1043/requests/${port}/response`, {
      as: 'mia',
      body: answer,
    });
    expect(other.status).toBe(404);
    // The inbox's older form address names the run too.
    const form = await inboxAs(server, tokens.mia, port);
    const shown = await form.post(`/runs/refund-1043/requests/${port}/respond`, {
      approved: 'true',
      'field:note': 'ok',
    });
    expect(shown).toContain(`Run refund-1043 has no request ${port}`);
    expect(await statusOf(server, port)).toBe('pending');
    expect(await refunded(store)).toBeUndefined();
  });
});

describe('rows edited on disk', () => {
  const tamperKinds = async (store: SqliteStore) =>
    (await store.listAudit()).filter((entry) => entry.kind === 'tamper.refused');

  it.each([
    ['payload', `UPDATE approvals SET args_json = replace(args_json, '"amount":35', '"amount":3500')`],
    ['args_hash', `UPDATE approvals SET args_hash = '00' || substr(args_hash, 3)`],
  ])('an edited %s is INTEGRITY_VIOLATION, audited, nothing refunded', async (_name, sql) => {
    const { server, store, edit } = setup();
    const port = await refundRun(server);
    expect(edit(sql)).toBe(1);
    const refused = await server.call('POST', `/v1/requests/${port}/decision`, { as: 'mia', body: answer });
    expect(refused.json.error.code).toBe('INTEGRITY_VIOLATION');
    expect(await tamperKinds(store)).toHaveLength(1);
    expect(await refunded(store)).toBeUndefined();
  });

  it.each([
    ['raised_by', `UPDATE approvals SET raised_by = NULL`, 'svc'],
    ['customer', `UPDATE approvals SET customer = NULL`, 'customer'],
    ['required_role', `UPDATE approvals SET required_role = NULL`, 'alice'],
  ] as const)('an edited %s does not let the refused one answer', async (_name, sql, as) => {
    const { server, store, edit } = setup();
    const port = await refundRun(server);
    edit(sql);
    const refused = await server.call('POST', `/v1/requests/${port}/decision`, { as, body: answer });
    expect(['FORBIDDEN', 'INTEGRITY_VIOLATION']).toContain(refused.json.error.code);
    expect(await refunded(store)).toBeUndefined();
  });

  it('a port row edited to kind tool-call is INTEGRITY_VIOLATION (not an internal error), audited, nothing refunded', async () => {
    const { server, store, edit } = setup();
    const port = await refundRun(server);
    edit(`UPDATE approvals SET kind = 'tool-call' WHERE id = '${port}'`);
    // As a run's answer: the runner sees the row's kind is not what the checkpoint waits on.
    const answered = await server.call('POST', `/v1/requests/${port}/decision`, { as: 'mia', body: answer });
    expect(answered.json.error.code, JSON.stringify(answered.json)).toBe('INTEGRITY_VIOLATION');
    expect(await tamperKinds(store)).toHaveLength(1);
    // As a verdict: no agent of this app raised it.
    const verdict = await server.call('POST', `/v1/requests/${port}/decision`, {
      as: 'mia',
      body: { approved: true },
    });
    expect(verdict.status, JSON.stringify(verdict.json)).toBe(404);
    expect(await refunded(store)).toBeUndefined();
  });

  it("an agent's call inside a run edited to kind port is refused, nothing recorded, nothing cancelled", async () => {
    const { server, store, edit } = setup({ model: createDemoModel() });
    const started = await server.call('POST', '/v1/runs', {
      as: 'svc',
      body: {
        workflow: 'support',
        run: 's-1',
        input: { customer: 'c-100', message: 'Please cancel my order 1044.' },
      },
    });
    expect(started.status).toBe(200);
    const [call] = await store.listApprovals({ status: 'pending' });
    expect(call?.kind).toBe('tool-call');
    edit(`UPDATE approvals SET kind = 'port' WHERE id = '${call!.id}'`);
    for (const body of [{ response: { approved: true } }, { approved: true }]) {
      const refused = await server.call('POST', `/v1/requests/${call!.id}/decision`, { as: 'alice', body });
      // No workflow of this app is named after the agent: refused before anything is recorded.
      expect(refused.json.error.code, JSON.stringify(refused.json)).toBe('NOT_FOUND');
    }
    expect((await store.getApproval(call!.id))?.status).toBe('pending');
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
  });

  it.each([
    ['tool (the port)', `UPDATE approvals SET tool = 'execute'`],
    ['agent (the workflow)', `UPDATE approvals SET agent = 'support'`],
  ])('an edited %s is INTEGRITY_VIOLATION, audited, nothing refunded', async (_name, sql) => {
    const { server, store, edit } = setup();
    const port = await refundRun(server);
    expect(edit(sql)).toBe(1);
    const refused = await server.call('POST', `/v1/requests/${port}/decision`, { as: 'mia', body: answer });
    expect(refused.json.error.code, JSON.stringify(refused.json)).toBe('INTEGRITY_VIOLATION');
    expect(await tamperKinds(store)).toHaveLength(1);
    expect(await refunded(store)).toBeUndefined();
  });

  it('a port row moved to another run is refused, and that run is not answered', async () => {
    const { server, store, edit } = setup();
    const port = await refundRun(server);
    await refundRun(server, 'refund-1043', 1043);
    edit(`UPDATE approvals SET run = 'refund-1043' WHERE id = '${port}'`);
    const refused = await server.call('POST', `/v1/requests/${port}/decision`, { as: 'mia', body: answer });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    expect(await refunded(store)).toBeUndefined();
    expect((await server.call('GET', '/v1/runs/refund-1043', { as: 'alice' })).json.status).toBe(
      'awaiting_input',
    );
  });

  it('an edited checkpoint body is INTEGRITY_VIOLATION on the HTTP route, audited, nothing refunded', async () => {
    const { server, store, edit } = setup();
    const port = await refundRun(server);
    edit(`UPDATE workflow_checkpoints SET body = replace(body, '"amount":35,', '"amount":3500,')`);
    const refused = await server.call('POST', `/v1/requests/${port}/decision`, { as: 'mia', body: answer });
    expect(refused.json.error.code).toBe('INTEGRITY_VIOLATION');
    expect(await tamperKinds(store)).toHaveLength(1);
    expect(await refunded(store)).toBeUndefined();
  });
});

describe('bad input', () => {
  it('malformed and deep JSON, unknown ids, ids with .., huge bodies: 4xx and nothing recorded', async () => {
    const { server, store } = setup();
    const port = await refundRun(server);
    const path = `/v1/requests/${port}/decision`;
    expect((await server.call('POST', path, { as: 'mia', raw: '{"response": ' })).status).toBe(400);
    const deep = `{"response":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const deepAnswer = await server.call('POST', path, { as: 'mia', raw: deep });
    expect(deepAnswer.status).toBeGreaterThanOrEqual(400);
    expect(deepAnswer.status).toBeLessThan(500);
    const huge = JSON.stringify({ response: { approved: true, note: 'x'.repeat(3_000_000) } });
    const hugeAnswer = await server.call('POST', path, { as: 'mia', raw: huge });
    expect(hugeAnswer.status).toBe(413);
    for (const id of ['apr_nope', '..', '..%2F..%2Fetc', 'a..b']) {
      const unknown = await server.call('POST', `/v1/requests/${id}/decision`, { as: 'mia', body: answer });
      expect(unknown.status, id).toBeGreaterThanOrEqual(400);
      expect(unknown.status, id).toBeLessThan(500);
      const alias = await server.call('POST', `/v1/runs/${id}/requests/${port}/response`, {
        as: 'mia',
        body: answer,
      });
      expect(alias.status, id).toBeGreaterThanOrEqual(400);
      expect(alias.status, id).toBeLessThan(500);
    }
    expect(await statusOf(server, port)).toBe('pending');
    expect(await refunded(store)).toBeUndefined();
  });
});

describe("an agent's call inside a run (one request, not two)", () => {
  async function supportRun(server: TestServer, store: SqliteStore) {
    const started = await server.call('POST', '/v1/runs', {
      as: 'svc',
      body: {
        workflow: 'support',
        run: 's-1',
        input: { customer: 'c-100', message: 'Please cancel my order 1044.' },
        user: 'c-100',
      },
    });
    expect(started.status).toBe(200);
    const [call] = await store.listApprovals({ status: 'pending' });
    expect(call).toMatchObject({ kind: 'tool-call', run: 's-1' });
    return call!.id;
  }

  it('the raiser and the customer are refused on every route and shape', async () => {
    const { server, store } = setup({ model: createDemoModel() });
    const id = await supportRun(server, store);
    const routes: Array<[string, unknown]> = [
      [`/v1/requests/${id}/decision`, { response: { approved: true } }],
      [`/v1/requests/${id}/decision`, { approved: true }],
      [`/v1/approvals/${id}/decision`, { approved: true }],
      [`/v1/runs/s-1/requests/${id}/response`, { response: { approved: true } }],
    ];
    for (const [path, body] of routes) {
      for (const as of ['svc', 'customer'] as const) {
        const refused = await server.call('POST', path, { as, body });
        expect(refused.status, `${as} on ${path}: ${JSON.stringify(refused.json)}`).toBe(403);
      }
    }
    expect((await store.getApproval(id))?.status).toBe('pending');
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
  });

  it('a call rejected on one route cannot be answered on another: 409, nothing runs', async () => {
    const { server, store } = setup({ model: createDemoModel() });
    const id = await supportRun(server, store);
    const rejected = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'alice',
      body: { approved: false, reason: 'Call the customer first.' },
    });
    expect(rejected.status).toBe(200);
    for (const [path, body] of [
      [`/v1/runs/s-1/requests/${id}/response`, { response: { approved: true } }],
      [`/v1/requests/${id}/decision`, { response: { approved: true } }],
      [`/v1/approvals/${id}/decision`, { approved: true }],
    ] as const) {
      const again = await server.call('POST', path, { as: 'mia', body });
      expect(again.status, `${path}: ${JSON.stringify(again.json)}`).toBe(409);
    }
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
  });
});

describe("racing on an agent's call inside a run", () => {
  it('an answer on the run route and a verdict on /v1/requests: one wins, the call runs at most once', async () => {
    const { server, store } = setup({ model: createDemoModel() });
    await server.call('POST', '/v1/runs', {
      as: 'svc',
      body: {
        workflow: 'support',
        run: 's-1',
        input: { customer: 'c-100', message: 'Please cancel my order 1044.' },
      },
    });
    const [call] = await store.listApprovals({ status: 'pending' });
    const [a, b] = await Promise.all([
      server.call('POST', `/v1/runs/s-1/requests/${call!.id}/response`, {
        as: 'mia',
        body: { response: { approved: true } },
      }),
      server.call('POST', `/v1/requests/${call!.id}/decision`, {
        as: 'alice',
        body: { approved: false, reason: 'Call first.' },
      }),
    ]);
    expect([a.status, b.status].sort(), JSON.stringify([a.json, b.json])).toEqual([200, 409]);
    const decided = (await store.listAudit()).filter(
      (entry) => entry.kind === 'request.decided' && entry.requestId === call!.id,
    );
    expect(decided).toHaveLength(1);
    if (a.status === 200) expect(await orderStatus(store, 1044)).toBe('Cancelled');
    else expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
  });
});

describe('expiry bound to the run', () => {
  it('an expired port request given a later expires_at on disk still cannot be answered', async () => {
    const { server, store, clock, edit } = setup();
    const port = await refundRun(server);
    const row = await store.getApproval(port);
    clock.at = new Date(Date.parse(row!.expiresAt) + 60_000);
    edit(`UPDATE approvals SET expires_at = '2999-01-01T00:00:00.000Z' WHERE id = '${port}'`);
    const late = await server.call('POST', `/v1/requests/${port}/decision`, { as: 'mia', body: answer });
    expect(late.json.error.code, JSON.stringify(late.json)).toBe('INTEGRITY_VIOLATION');
    expect((await store.listAudit()).map((entry) => entry.kind)).toContain('tamper.refused');
    expect(await refunded(store)).toBeUndefined();
  });
});

describe('tool-call rows edited on disk', () => {
  it.each([
    ['payload', `UPDATE approvals SET args_json = replace(args_json, '1044', '1043')`],
    ['args_hash', `UPDATE approvals SET args_hash = '00' || substr(args_hash, 3)`],
  ])('an edited %s is INTEGRITY_VIOLATION, audited, nothing cancelled', async (_name, sql) => {
    const { server, store, edit } = setup();
    const id = await toolCall(server);
    expect(edit(sql)).toBe(1);
    const refused = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(refused.json.error.code, JSON.stringify(refused.json)).toBe('INTEGRITY_VIOLATION');
    expect((await store.listAudit()).map((entry) => entry.kind)).toContain('tamper.refused');
    expect(await orderStatus(store, 1043)).not.toBe('Cancelled');
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
  });

  it('a tool call edited to kind port, or into a run, is refused and nothing runs', async () => {
    const { server, store, edit } = setup();
    const id = await toolCall(server);
    edit(`UPDATE approvals SET kind = 'port'`);
    for (const body of [{ approved: true }, { response: { approved: true } }]) {
      const refused = await server.call('POST', `/v1/requests/${id}/decision`, { as: 'alice', body });
      expect(refused.status, JSON.stringify(refused.json)).toBe(404);
    }
    edit(`UPDATE approvals SET kind = 'tool-call'`);
    await refundRun(server);
    edit(`UPDATE approvals SET run = 'refund-1040' WHERE id = '${id}'`);
    const asAnswer = await server.call('POST', `/v1/runs/refund-1040/requests/${id}/response`, {
      as: 'alice',
      body: { response: { approved: true } },
    });
    expect(asAnswer.status, JSON.stringify(asAnswer.json)).toBe(404);
    expect((await store.getApproval(id))?.status).toBe('pending');
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
  });

  it.each([
    ['customer', `UPDATE approvals SET customer = NULL`, 'customer'],
    ['raised_by', `UPDATE approvals SET raised_by = NULL`, 'svc'],
  ] as const)('an edited %s does not let the refused one decide', async (_name, sql, as) => {
    const { server, store, edit } = setup();
    const id = await toolCall(server);
    edit(sql);
    const refused = await server.call('POST', `/v1/requests/${id}/decision`, {
      as,
      body: { approved: true },
    });
    expect(refused.status, JSON.stringify(refused.json)).toBeGreaterThanOrEqual(400);
    expect((await store.getApproval(id))?.status).toBe('pending');
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
  });
});

describe('the inbox form, abused', () => {
  it('no CSRF token, a wrong one, the service token, and a huge form: nothing recorded', async () => {
    const { server, store } = setup();
    const port = await refundRun(server);
    const login = await server.app.request('/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.mia, next: '/' }).toString(),
    });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const post = (form: Record<string, string>) =>
      server.app.request(`/requests/${port}/decide`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
        body: new URLSearchParams(form).toString(),
      });
    expect((await post({ approved: 'true', 'field:note': 'ok' })).status).toBe(403);
    expect((await post({ csrf: 'forged', approved: 'true', 'field:note': 'ok' })).status).toBe(403);
    expect((await post({ csrf: 'x', approved: 'true', 'field:note': 'x'.repeat(3_000_000) })).status).toBe(
      413,
    );
    // The raiser signed in to the inbox with its service token is refused like on the API.
    const backend = await inboxAs(server, tokens.svc, port);
    const shown = await backend.post(`/requests/${port}/decide`, { approved: 'true', 'field:note': 'mine' });
    expect(shown).toContain('You cannot decide this one:');
    expect(await statusOf(server, port)).toBe('pending');
    expect(await refunded(store)).toBeUndefined();
  });
});
