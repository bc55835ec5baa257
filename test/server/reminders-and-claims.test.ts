import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { createAgent } from '../../src/agent/create-agent.ts';
import type { CountersignEvent } from '../../src/events/event-bus.ts';
import { webhookPayload } from '../../src/server/webhooks/webhook-sender.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { defineTool } from '../../src/tools/define-tool.ts';
import { scriptModel } from '../helpers/script-model.ts';
import { approvers, type TestServer, testServer } from './helpers.ts';

/**
 * Reminders, escalation, the warning before expiry, and claims, over HTTP on a real SQLite
 * file: the server's own watcher pass fires what is due (a clock the test moves), each once,
 * and the API shows and takes claims under the decision's own separation-of-duties rule.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const MINUTE = 60_000;

/** A wire transfer needs a senior approver; after an hour it escalates to managers (mia). */
const wireTool = defineTool({
  name: 'wire_money',
  description: 'Send money.',
  input: z.object({ amount: z.number() }),
  role: 'senior',
  ttl: '2h',
  remindAfter: '10m',
  escalateAfter: '1h',
  escalateTo: 'manager',
  warnBefore: '30m',
  execute: ({ amount }) => ({ sent: amount }),
});

/** `aliceSenior`: alice holds `senior` too, so she and (after escalation) mia may both decide. */
function setup(options: { aliceSenior?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-nudges-'));
  dirs.push(dir);
  const store = createSqliteStore({ path: join(dir, 'store.db') });
  let offset = 0;
  const now = () => new Date(Date.now() + offset);
  const wires = createAgent({
    name: 'wires',
    instructions: 'Wires.',
    tools: [wireTool],
    model: scriptModel([[{ tool: 'wire_money', args: { amount: 500 } }], ['Sent.']]),
    now,
  });
  const server = testServer({
    store,
    now,
    agents: [wires],
    workflows: [refundWorkflow],
    checkpoints: store,
    approvers: approvers.map((approver) =>
      options.aliceSenior && approver.name === 'alice'
        ? { ...approver, roles: ['support', 'senior'] }
        : approver,
    ),
  });
  const seen: CountersignEvent[] = [];
  return {
    store,
    path: join(dir, 'store.db'),
    server,
    seen,
    advance: (ms: number) => {
      offset += ms;
    },
    async listen() {
      await server.feed.start();
      server.feed.subscribe(({ event }) => seen.push(event));
    },
  };
}

async function raiseWire(server: TestServer): Promise<string> {
  const turn = await server.call('POST', '/v1/sessions/w1/messages', {
    as: 'svc',
    body: { text: 'Wire 500.', user: 'c-100', agent: 'wires' },
  });
  expect(turn.status).toBe(200);
  return turn.json.approvals[0].id as string;
}

const kinds = async (store: Store, kind: string) =>
  (await store.listAudit()).filter((entry) => entry.kind === kind).length;

describe('reminders, escalation and the warning before expiry', () => {
  it('fire once each, in order, as the watcher passes their times; the request shows them', async () => {
    const { store, server, seen, advance, listen } = setup();
    await listen();
    const id = await raiseWire(server);
    const raised = await server.call('GET', `/v1/requests/${id}`, { as: 'alice' });
    expect(raised.json).toMatchObject({ claim: null, escalatedTo: null, requiredRole: 'senior' });
    expect(raised.json.nudges).toMatchObject({ remindedAt: null, escalateTo: 'manager', escalatedAt: null });
    expect(Date.parse(raised.json.nudges.remindAt) - Date.parse(raised.json.createdAt)).toBe(10 * MINUTE);
    expect(Date.parse(raised.json.expiresAt) - Date.parse(raised.json.nudges.expiringAt)).toBe(30 * MINUTE);

    await server.watch();
    // The live card of the raised request carries its nudge times (from its audit entry).
    expect(seen.find((event) => event.type === 'approval.requested')).toMatchObject({
      approval: { id, nudges: raised.json.nudges, claim: null, escalatedTo: null },
    });
    expect(await kinds(store, 'request.reminder')).toBe(0);
    advance(11 * MINUTE);
    await server.watch();
    await server.watch();
    expect(await kinds(store, 'request.reminder')).toBe(1);
    expect(await kinds(store, 'request.escalated')).toBe(0);
    expect(seen.filter((event) => event.type === 'request.reminder')).toMatchObject([
      { requestId: id, tool: 'wire_money', kind: 'tool-call', requiredRole: 'senior', escalatedTo: null },
    ]);

    // Before the escalation nobody here holds `senior`: mia (support, manager) may not decide.
    const early = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'mia',
      body: { approved: true },
    });
    expect(early.status).toBe(403);
    expect(early.json.error.message).toContain('senior');

    advance(50 * MINUTE);
    await server.watch();
    await server.watch();
    expect(await kinds(store, 'request.escalated')).toBe(1);
    const escalated = await server.call('GET', `/v1/requests/${id}`, { as: 'alice' });
    expect(escalated.json).toMatchObject({ escalatedTo: 'manager', status: 'pending' });
    expect(escalated.json.nudges.escalatedAt).not.toBeNull();
    expect(seen.filter((event) => event.type === 'request.escalated')).toMatchObject([
      { requestId: id, escalatedTo: 'manager' },
    ]);

    advance(31 * MINUTE);
    await server.watch();
    expect(await kinds(store, 'request.expiring')).toBe(1);
    expect(seen.map((event) => event.type).filter((type) => type.startsWith('request.'))).toEqual([
      'request.reminder',
      'request.escalated',
      'request.expiring',
    ]);

    // Escalated to managers: mia may decide now; alice (support) still may not.
    const refused = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(refused.status).toBe(403);
    expect(refused.json.error.message).toContain('or manager, to which it was escalated');
    const decided = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'mia',
      body: { approved: true },
    });
    expect(decided.status).toBe(200);
    advance(60 * MINUTE);
    await server.watch();
    expect([
      await kinds(store, 'request.reminder'),
      await kinds(store, 'request.escalated'),
      await kinds(store, 'request.expiring'),
    ]).toEqual([1, 1, 1]);
  });

  it('a server that was down fires every overdue nudge at its first pass, once, and none after expiry', async () => {
    const { store, server, advance } = setup();
    const id = await raiseWire(server);
    advance(95 * MINUTE);
    await server.watch();
    expect((await store.listAudit()).filter((e) => e.requestId === id).map((e) => e.kind)).toEqual([
      'request.raised',
      'request.reminder',
      'request.escalated',
      'request.expiring',
    ]);
    advance(60 * MINUTE);
    await server.watch();
    expect(await kinds(store, 'request.reminder')).toBe(1);
    expect(await store.getApproval(id)).toMatchObject({ status: 'expired' });
  });

  it('are sent as webhooks with one delivery id per nudge and request', () => {
    const base = {
      at: '2026-12-01T10:00:00.000Z',
      requestId: 'r1',
      session: 's1',
      kind: 'tool-call' as const,
      tool: 'wire_money',
      dueAt: '2026-12-01T10:00:00.000Z',
      expiresAt: '2026-12-01T12:00:00.000Z',
      requiredRole: 'senior',
      escalatedTo: null,
    };
    const reminder = webhookPayload({ type: 'request.reminder', ...base });
    const escalated = webhookPayload({ type: 'request.escalated', ...base, escalatedTo: 'manager' });
    expect(reminder).toMatchObject({ type: 'request.reminder', data: { requestId: 'r1' } });
    expect(escalated?.type).toBe('request.escalated');
    expect(reminder?.id).not.toBe(escalated?.id);
    expect(webhookPayload({ type: 'request.reminder', ...base })?.id).toBe(reminder?.id);
    expect(
      webhookPayload({
        type: 'request.claimed',
        at: base.at,
        requestId: 'r1',
        session: 's1',
        by: 'a',
        until: base.at,
      }),
    ).toBeNull();
  });
});

describe('claims over HTTP', () => {
  it('an approver holds a request; others see who and until when, and cannot take it until it lapses', async () => {
    const { store, server, seen, advance, listen } = setup({ aliceSenior: true });
    await listen();
    const id = await raiseWire(server);
    // Escalated to managers, so mia may decide (and so claim) it too.
    advance(61 * MINUTE);
    await server.watch();
    const claimed = await server.call('POST', `/v1/requests/${id}/claim`, {
      as: 'alice',
      body: { for: '20m' },
    });
    expect(claimed.status).toBe(200);
    expect(claimed.json.claim.by).toBe('alice');
    expect(Date.parse(claimed.json.claim.until) - (Date.now() + 61 * MINUTE)).toBeGreaterThan(19 * MINUTE);
    const seenByMia = await server.call('GET', '/v1/requests?status=pending', { as: 'mia' });
    expect(seenByMia.json.find((r: { id: string }) => r.id === id).claim).toEqual(claimed.json.claim);

    const taken = await server.call('POST', `/v1/requests/${id}/claim`, { as: 'mia' });
    expect(taken.status).toBe(409);
    expect(taken.json.error).toMatchObject({ code: 'CLAIMED' });
    expect(taken.json.error.message).toContain('claimed by alice until');
    const releasedByOther = await server.call('POST', `/v1/requests/${id}/release`, { as: 'mia' });
    expect(releasedByOther.status).toBe(409);

    // Renewing your own claim: no body claims for the default 15 minutes from now.
    const renewed = await server.call('POST', `/v1/requests/${id}/claim`, { as: 'alice' });
    expect(renewed.status).toBe(200);
    expect(Date.parse(renewed.json.claim.until) - (Date.now() + 61 * MINUTE)).toBeLessThan(16 * MINUTE);

    // It lapses by itself: 16 minutes on, nobody holds it and mia takes it.
    advance(16 * MINUTE);
    expect((await server.call('GET', `/v1/requests/${id}`, { as: 'mia' })).json.claim).toBeNull();
    expect((await server.call('POST', `/v1/requests/${id}/claim`, { as: 'mia' })).json.claim.by).toBe('mia');
    const release = await server.call('POST', `/v1/requests/${id}/release`, { as: 'mia' });
    expect(release.status).toBe(200);
    expect(release.json.claim).toBeNull();
    // Nothing to give back is not an error.
    expect((await server.call('POST', `/v1/requests/${id}/release`, { as: 'mia' })).status).toBe(200);

    await server.watch();
    const claims = seen.filter(
      (event) => event.type === 'request.claimed' || event.type === 'request.released',
    );
    expect(claims).toMatchObject([
      { type: 'request.claimed', by: 'alice' },
      { type: 'request.claimed', by: 'alice' },
      { type: 'request.claimed', by: 'mia' },
      { type: 'request.released', by: 'mia' },
    ]);
    expect(await kinds(store, 'request.claimed')).toBe(3);
    expect(await kinds(store, 'request.released')).toBe(1);
  });

  it('deciding needs no claim: someone else holding it does not stop a decision', async () => {
    const { server, advance } = setup({ aliceSenior: true });
    const id = await raiseWire(server);
    // Escalate so mia may decide, then alice claims and mia decides anyway.
    advance(61 * MINUTE);
    await server.watch();
    const claim = await server.call('POST', `/v1/requests/${id}/claim`, { as: 'alice', body: { for: '5m' } });
    expect(claim.status).toBe(200);
    const decided = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'mia',
      body: { approved: true },
    });
    expect(decided.status).toBe(200);
    expect(decided.json.request).toMatchObject({ status: 'approved', claim: { by: 'alice' } });
    const after = await server.call('POST', `/v1/requests/${id}/claim`, { as: 'mia' });
    expect(after.status).toBe(409);
    expect(after.json.error.code).toBe('ALREADY_DECIDED');
  });

  it('the raiser, the customer, a service token and a caller without the role may not claim; bad terms are 400', async () => {
    const { store, server } = setup();
    const id = await raiseWire(server);
    const port = await server.call('POST', '/v1/runs', {
      as: 'svc',
      body: { workflow: 'refund', run: 'refund-1040', input: 1040, user: 'c-300' },
    });
    const portId = port.json.requests[0].id as string;
    for (const as of ['svc', 'customer'] as const) {
      const refused = await server.call('POST', `/v1/requests/${id}/claim`, { as });
      expect(refused.status).toBe(403);
      expect(refused.json.error.code).toBe('FORBIDDEN');
    }
    // wire_money needs `senior`: alice (support) may not claim what she may not decide.
    expect((await server.call('POST', `/v1/requests/${id}/claim`, { as: 'alice' })).status).toBe(403);
    // The port request (manager-approval) needs a manager: mia claims it, alice may not.
    expect((await server.call('POST', `/v1/requests/${portId}/claim`, { as: 'alice' })).status).toBe(403);
    const portClaim = await server.call('POST', `/v1/requests/${portId}/claim`, { as: 'mia' });
    expect(portClaim.status).toBe(200);
    expect(portClaim.json).toMatchObject({ kind: 'port', claim: { by: 'mia' } });

    for (const body of [{ for: '9h' }, { for: 'soon' }, { for: 0 }, { until: 'x' }]) {
      const bad = await server.call('POST', `/v1/requests/${portId}/claim`, { as: 'mia', body });
      expect(bad.status).toBe(400);
      expect(bad.json.error.code).toBe('INVALID_INPUT');
    }
    expect((await server.call('POST', '/v1/requests/nope/claim', { as: 'mia' })).status).toBe(404);
    expect((await server.call('POST', `/v1/requests/${id}/claim`)).status).toBe(401);
    // Refusals wrote nothing: one claim in the trail.
    expect(await kinds(store, 'request.claimed')).toBe(1);
  });
});

describe('an edited row', () => {
  it('cannot hand a request to a role its tool does not escalate to', async () => {
    const { path, server } = setup();
    const id = await raiseWire(server);
    // Someone with the database file "escalates" it to support, and marks the escalation sent.
    const db = new DatabaseSync(path);
    db.prepare("UPDATE approvals SET escalated_to = 'support' WHERE id = ?").run(id);
    db.close();
    const decided = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(decided.status).toBe(403);
    expect(decided.json.error.message).toContain('needs the senior role');
    expect((await server.call('POST', `/v1/requests/${id}/claim`, { as: 'alice' })).status).toBe(403);
    // The view says what the decision judges: not escalated.
    expect((await server.call('GET', `/v1/requests/${id}`, { as: 'alice' })).json.escalatedTo).toBeNull();
  });

  it('runs kept apart from the agents (a memory checkpoint store) are not claimable, and say so', async () => {
    const server = testServer({ workflows: [refundWorkflow], checkpoints: createMemoryCheckpointStore() });
    const run = await server.call('POST', '/v1/runs', {
      as: 'svc',
      body: { workflow: 'refund', run: 'refund-1040', input: 1040, user: 'c-300' },
    });
    const refused = await server.call('POST', `/v1/requests/${run.json.requests[0].id}/claim`, { as: 'mia' });
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatchObject({ code: 'INVALID_INPUT' });
    expect(refused.json.error.message).toContain('keeps no claims');
  });
});
