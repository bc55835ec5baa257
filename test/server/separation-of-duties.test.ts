import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bookstoreAgent, refundWorkflow, supportWorkflow } from '../../examples/bookstore/app.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import { createServer } from '../../src/server/create-server.ts';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { createSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { approvers, tokens } from './helpers.ts';

/**
 * Separation of duties on every HTTP route that takes a person's word on a request: the raiser
 * (the caller that posted the message or started the run), the customer it acts for, and a
 * caller whose only role is `service` never decide, answer or reconcile it. Real HTTP on
 * loopback, a real SQLite file.
 */
const extra = {
  /** A second backend token: service only, but not the raiser. */
  ops: 'ops-token-0123456789abcde',
  /** A backend token that also holds support: it raises, so it may not decide what it raised. */
  desk: 'desk-token-0123456789abcd',
};

let running: RunningServer | null = null;
let store: SqliteStore | null = null;
let dir: string | null = null;

afterEach(async () => {
  await running?.close();
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  running = store = dir = null;
});

async function start() {
  dir = mkdtempSync(join(tmpdir(), 'countersign-sod-'));
  store = createSqliteStore({ path: join(dir, 'store.db') });
  const server = createServer({
    agents: [bookstoreAgent],
    model: createDemoModel(),
    store,
    workflows: [refundWorkflow, supportWorkflow],
    approvers: [
      ...approvers,
      { name: 'ops', roles: ['service'], token: extra.ops },
      { name: 'desk', roles: ['service', 'support', 'manager'], token: extra.desk },
    ],
    watchIntervalMs: 0,
    log: () => undefined,
  });
  running = await startServer(server, { host: '127.0.0.1', port: 0 });
  const url = running.url;
  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: assertions below check the shape.
    return { status: response.status, json: (await response.json()) as any };
  };
  /** Signs in to the inbox with a token; returns the cookie. */
  const signIn = async (token: string) => {
    const response = await fetch(`${url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, next: '/' }).toString(),
    });
    expect(response.status).toBe(303);
    return response.headers.get('set-cookie')!.split(';')[0]!;
  };
  const page = async (path: string, cookie: string, form?: Record<string, string>) => {
    const response = await fetch(`${url}${path}`, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        accept: 'text/html',
        cookie,
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded', origin: url } : {}),
      },
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    return {
      status: response.status,
      html: await response.text(),
      location: response.headers.get('location'),
    };
  };
  return { call, store, signIn, page };
}

const forbidden = (reply: { status: number; json: { error?: { code: string; message: string } } }) => {
  expect(reply.status, JSON.stringify(reply.json)).toBe(403);
  expect(reply.json.error?.code).toBe('FORBIDDEN');
  return reply.json.error!.message;
};

describe('separation of duties over HTTP', () => {
  it('a tool call: its raiser, its customer and a service-only token are refused; a person decides it once', async () => {
    const { call } = await start();
    const raised = await call('POST', '/v1/sessions/s1/messages', extra.desk, {
      text: 'Please cancel my order 1044.',
      user: 'c-100',
    });
    expect(raised.status).toBe(200);
    const id: string = raised.json.approvals[0].id;
    expect(raised.json.approvals[0]).toMatchObject({ raisedBy: 'desk', customer: 'c-100' });
    const path = `/v1/approvals/${id}/decision`;

    expect(forbidden(await call('POST', path, extra.desk, { approved: true }))).toContain(
      'desk raised this request',
    );
    expect(forbidden(await call('POST', path, tokens.customer, { approved: true }))).toContain(
      'is the customer this request acts for',
    );
    expect(forbidden(await call('POST', path, extra.ops, { approved: true }))).toContain(
      'only the service role',
    );
    // A refusal decides nothing: the request still waits, and nothing ran.
    expect((await call('GET', `/v1/approvals/${id}`, tokens.alice)).json.status).toBe('pending');
    expect((await call('GET', '/v1/executions', tokens.alice)).json).toEqual([]);

    const decided = await call('POST', path, tokens.alice, { approved: true });
    expect(decided.status).toBe(200);
    expect((await call('GET', `/v1/approvals/${id}`, tokens.alice)).json.decision).toMatchObject({
      by: 'alice',
    });
  });

  it('the inbox: the raiser and the customer see why they cannot decide, and a hand-made form is refused', async () => {
    const { call, signIn, page } = await start();
    const raised = await call('POST', '/v1/sessions/s1/messages', extra.desk, {
      text: 'Please cancel my order 1044.',
      user: 'c-100',
    });
    const id: string = raised.json.approvals[0].id;
    for (const [token, words] of [
      [extra.desk, 'desk raised this request'],
      [tokens.customer, 'c-100 is the customer this request acts for'],
    ] as const) {
      const cookie = await signIn(token);
      const detail = await page(`/approvals/${id}`, cookie);
      expect(detail.html).toContain(words);
      expect(detail.html).not.toContain('value="approve"');
      const csrf = /name="csrf" value="([^"]+)"/.exec(detail.html)![1]!;
      const posted = await page(`/approvals/${id}/decide`, cookie, { csrf, verdict: 'approve', return: '/' });
      expect(posted.status).toBe(303);
      expect((await page(posted.location!, cookie)).html).toContain(words);
    }
    expect((await call('GET', `/v1/approvals/${id}`, tokens.alice)).json.status).toBe('pending');
    const alice = await signIn(tokens.alice);
    expect((await page(`/approvals/${id}`, alice)).html).toContain('value="approve"');
  });

  it('the raiser cannot approve a service token raised and then used itself (the repro of the report)', async () => {
    const { call } = await start();
    const raised = await call('POST', '/v1/sessions/s1/messages', tokens.svc, {
      text: 'Please cancel my order 1044.',
      user: 'c-100',
    });
    const id: string = raised.json.approvals[0].id;
    forbidden(await call('POST', `/v1/approvals/${id}/decision`, tokens.svc, { approved: true }));
    const session = await call('GET', '/v1/sessions/s1', tokens.alice);
    expect(session.json.pending).toHaveLength(1);
  });

  it('a workflow port that wraps an agent call: its raiser and customer cannot answer it', async () => {
    const { call } = await start();
    const started = await call('POST', '/v1/runs', tokens.svc, {
      workflow: 'support',
      run: 'help-1',
      input: { customer: 'c-100', message: 'Please cancel my order 1044.' },
    });
    expect(started.status, JSON.stringify(started.json)).toBe(200);
    const request = started.json.requests[0];
    const path = `/v1/runs/help-1/requests/${request.id}/response`;
    const answer = { response: { approved: true } };
    expect(forbidden(await call('POST', path, tokens.customer, answer))).toContain('customer');
    expect(forbidden(await call('POST', path, tokens.svc, answer))).toContain('service role');
    // Nothing was recorded: the run still waits on the same request, the call did not run.
    const view = await call('GET', '/v1/runs/help-1', tokens.alice);
    expect(view.json).toMatchObject({ status: 'awaiting_input', requests: [{ id: request.id }] });
    expect((await call('GET', '/v1/executions', tokens.alice)).json).toEqual([]);

    const answered = await call('POST', path, tokens.alice, answer);
    expect(answered.status, JSON.stringify(answered.json)).toBe(200);
    expect(answered.json.status).toBe('completed');
  });

  it('a plain workflow port: the one who started the run and its customer cannot answer it', async () => {
    const { call } = await start();
    const started = await call('POST', '/v1/runs', extra.desk, {
      workflow: 'refund',
      run: 'refund-1040',
      input: 1040,
      user: 'c-100',
    });
    expect(started.status, JSON.stringify(started.json)).toBe(200);
    const path = `/v1/runs/refund-1040/requests/${started.json.requests[0].id}/response`;
    const answer = { response: { approved: true, note: 'ok' } };
    expect(forbidden(await call('POST', path, extra.desk, answer))).toContain('desk raised this request');
    expect(forbidden(await call('POST', path, tokens.customer, answer))).toContain('customer');
    expect((await call('POST', path, tokens.mia, answer)).status).toBe(200);
  });

  it('reconcile: the session’s customer and the raiser cannot settle an unknown outcome; a person can', async () => {
    const { call, store } = await start();
    const raised = await call('POST', '/v1/sessions/s1/messages', extra.desk, {
      text: 'Please cancel my order 1044.',
      user: 'c-100',
    });
    const id: string = raised.json.approvals[0].id;
    // An approved call whose process died mid-run: the ledger says started, then unknown.
    const at = new Date().toISOString();
    await store.decide(id, { verdict: 'approved', by: 'alice', reason: null, at, kind: 'person' });
    await store.startExecution({
      requestId: id,
      session: 's1',
      callId: raised.json.approvals[0].callId,
      tool: 'cancel_order',
      args: { orderId: 1044 },
      idempotencyKey: `countersign:${id}`,
      at,
    });
    await store.finishExecution(id, { status: 'unknown', result: null, at });
    const path = `/v1/executions/${id}/reconcile`;
    expect(forbidden(await call('POST', path, tokens.customer, { outcome: 'failed' }))).toContain(
      'settle the outcome of',
    );
    forbidden(await call('POST', path, extra.desk, { outcome: 'failed' }));
    forbidden(await call('POST', path, extra.ops, { outcome: 'failed' }));
    expect((await store.getExecution(id))?.status).toBe('unknown');
    const settled = await call('POST', path, tokens.alice, { outcome: 'failed' });
    expect(settled.status, JSON.stringify(settled.json)).toBe(200);
    expect((await store.getExecution(id))?.status).toBe('failed');
  });
});
