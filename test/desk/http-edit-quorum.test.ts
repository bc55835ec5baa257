import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bookstoreAgent } from '../../examples/bookstore/app.ts';
import { kitchenAgent } from '../../examples/kitchen/app.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import { createServer } from '../../src/server/create-server.ts';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { createSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { type ContractCheck, contractChecker } from '../helpers/openapi-contract.ts';

/**
 * Edit-then-approve and a quorum over real HTTP on loopback, on a real SQLite file, every
 * /v1 response checked against the server's own OpenAPI document.
 */
const token = (name: string) => `${name}-token-0123456789abcdef`;
const people = {
  backend: ['service'],
  sam: ['support'],
  meg: ['support', 'manager'],
  max: ['manager'],
  moe: ['manager'],
  // An approver who is also the customer: never decides c-100's requests.
  'c-100': ['support', 'manager'],
} as const;

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
  dir = mkdtempSync(join(tmpdir(), 'countersign-desk-'));
  store = createSqliteStore({ path: join(dir, 'store.db') });
  const server = createServer({
    agents: [bookstoreAgent, kitchenAgent],
    model: createDemoModel(),
    store,
    approvers: Object.entries(people).map(([name, roles]) => ({
      name,
      roles: [...roles],
      token: token(name),
    })),
    watchIntervalMs: 0,
    log: () => undefined,
  });
  running = await startServer(server, { host: '127.0.0.1', port: 0 });
  const url = running.url;
  let contract: ContractCheck | undefined;
  const call = async (method: string, path: string, as: keyof typeof people, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token(as)}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: assertions below check the shape.
    const json = (await response.json()) as any;
    contract ??= contractChecker(
      (await (await fetch(`${url}/v1/openapi.json`)).json()) as Record<string, unknown>,
    );
    contract({
      method,
      path,
      status: response.status,
      contentType: response.headers.get('content-type'),
      body: json,
    });
    return { status: response.status, json };
  };
  const ask = async (session: string, text: string, agent = 'bookstore') => {
    const turn = await call('POST', `/v1/sessions/${session}/messages`, 'backend', {
      text,
      user: 'c-100',
      agent,
    });
    expect(turn.status, JSON.stringify(turn.json)).toBe(200);
    return turn.json.approvals[0].id as string;
  };
  const decide = (id: string, as: keyof typeof people, body: unknown) =>
    call('POST', `/v1/requests/${id}/decision`, as, body);
  return { call, ask, decide };
}

describe('edit and quorum over HTTP', () => {
  it('approves with an edit: the edited call runs, the request shows both calls and the diff', async () => {
    const { call, ask, decide } = await start();
    const id = await ask('k1', "We're out of eggs, put a dozen on the list.", 'kitchen');
    const shown = await call('GET', `/v1/requests/${id}`, 'sam');
    expect(shown.json).toMatchObject({
      editable: ['quantity'],
      approvalsNeeded: 1,
      approvals: [],
      edit: null,
    });
    const refused = await decide(id, 'sam', { approved: true, edit: { item: 'caviar' } });
    expect(refused.status).toBe(422);
    expect(refused.json.error.code).toBe('NOT_EDITABLE');
    const wrongType = await decide(id, 'sam', { approved: true, edit: ['quantity'] });
    expect(wrongType.status).toBe(400);
    const done = await decide(id, 'sam', {
      approved: true,
      edit: { quantity: '6' },
      reason: 'They meant six.',
    });
    expect(done.status).toBe(200);
    expect(done.json.request).toMatchObject({
      status: 'approved',
      args: { item: 'eggs', quantity: '12' },
      decision: {
        verdict: 'approved',
        by: 'sam',
        edit: { args: { item: 'eggs', quantity: '6' }, diff: [{ field: 'quantity', from: '12', to: '6' }] },
      },
    });
    expect(done.json.turn.status).toBe('completed');
    expect(await store!.getState('kitchen', 'shopping-list')).toEqual(['milk', 'bread', '6 eggs']);
  });

  it('an amount routed to two managers: distinct approvers, never the customer, the call runs once after the second', async () => {
    const { call, ask, decide } = await start();
    const id = await ask('b1', 'Please cancel my order 1062.');
    const shown = await call('GET', `/v1/requests/${id}`, 'sam');
    expect(shown.json).toMatchObject({ requiredRole: 'manager', approvalsNeeded: 2, approvals: [] });
    expect((await decide(id, 'sam', { approved: true })).json.error.code).toBe('FORBIDDEN');
    expect((await decide(id, 'c-100', { approved: true })).json.error.code).toBe('FORBIDDEN');
    expect((await decide(id, 'backend', { approved: true })).json.error.code).toBe('FORBIDDEN');
    const first = await decide(id, 'meg', { approved: true });
    expect(first.status).toBe(200);
    expect(first.json.request).toMatchObject({ status: 'pending', approvals: [{ by: 'meg' }] });
    expect(first.json.turn.status).toBe('awaiting_approval');
    const twice = await decide(id, 'meg', { approved: true });
    expect(twice.status).toBe(403);
    expect(twice.json.error.message).toContain('already approved');
    expect(await store!.listExecutions({})).toEqual([]);
    const second = await decide(id, 'max', { approved: true });
    expect(second.json.request).toMatchObject({
      status: 'approved',
      decision: { by: 'max', approvals: [{ by: 'meg' }, { by: 'max' }] },
    });
    expect((await store!.listExecutions({})).map((e) => e.requestId)).toEqual([id]);
    const kinds = (await store!.listAudit())
      .filter((entry) => entry.requestId === id)
      .map((entry) => entry.kind);
    expect(kinds).toEqual([
      'request.raised',
      'request.approval-added',
      'request.decided',
      'execution.started',
      'execution.finished',
    ]);
  });

  it('two managers racing for the last slot over HTTP: one wins, the call runs once', async () => {
    const { ask, decide } = await start();
    const id = await ask('b2', 'Please cancel my order 1062.');
    await decide(id, 'meg', { approved: true });
    const [a, b] = await Promise.all([
      decide(id, 'max', { approved: true }),
      decide(id, 'meg', { approved: true }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 403]);
    expect((await store!.listExecutions({})).length).toBe(1);
  });

  it('a manager-sized cancellation: support cannot, one manager can', async () => {
    const { ask, decide } = await start();
    const id = await ask('b3', 'Please cancel my order 1061.');
    expect((await decide(id, 'sam', { approved: true })).status).toBe(403);
    const done = await decide(id, 'max', { approved: true });
    expect(done.json.request.status).toBe('approved');
  });
});
