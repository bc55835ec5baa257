import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { bookstoreAgent } from '../../examples/bookstore/app.ts';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { createSupportWorkflow } from '../../examples/bookstore/support-workflow.ts';
import { createAgent } from '../../src/agent/create-agent.ts';
import type { CountersignEvent } from '../../src/events/event-bus.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { defineTool } from '../../src/tools/define-tool.ts';
import { createWorkflowRunner } from '../../src/workflow/runner.ts';
import { bookstore, orderStatus } from '../helpers/bookstore-agent.ts';
import { scriptModel } from '../helpers/script-model.ts';
import { testServer } from './helpers.ts';

describe('the store watcher', () => {
  it("announces requests raised and decided by another process, which never reach this server's bus: from the audit log", async () => {
    const store = createMemoryStore();
    const server = testServer({ store });
    const seen: CountersignEvent[] = [];
    await server.feed.start();
    server.feed.subscribe(({ event }) => seen.push(event));
    await server.watch();
    // Another process: the same store, its own agent, no connection to this server's bus.
    const { agent: other } = bookstore({ store });
    const turn = await other.chat('console', 'Please cancel my order 1044.', { principal: 'c-100' });
    const id = turn.approvals[0]!.id;
    await server.watch();
    expect(seen).toMatchObject([{ type: 'approval.requested', approval: { id, tool: 'cancel_order' } }]);
    await other.approve(id, { by: 'cli-user' });
    await server.watch();
    expect(seen[1]).toMatchObject({
      type: 'approval.decided',
      requestId: id,
      verdict: 'approved',
      by: 'cli-user',
    });
    expect(seen[2]).toMatchObject({ type: 'execution.finished', requestId: id, status: 'succeeded' });
    await server.watch();
    expect(seen).toHaveLength(3);
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
  });

  it('reads no pending request to announce it, and none for expiry but the due ones: one due-query per pass', async () => {
    const store = createMemoryStore();
    const calls: string[] = [];
    const counted = new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(name));
          return value.apply(target, args);
        };
      },
    });
    const { agent: other } = bookstore({ store });
    for (const session of ['a', 'b', 'c'])
      await other.chat(session, 'Please cancel my order 1044.', { principal: 'c-100' });
    const decided = (await store.listApprovals({ status: 'pending' }))[0]!;
    const server = testServer({ store: counted });
    await server.watch();
    await other.approve(decided.id, { by: 'cli-user' });
    calls.length = 0;
    await server.watch();
    // The old announcement read every request that left the pending list (getApproval).
    expect(calls.filter((name) => name === 'getApproval')).toEqual([]);
    expect(calls.filter((name) => name === 'listApprovals')).toEqual([]);
    expect(calls.filter((name) => name === 'listDue')).toEqual(['listDue']);
  });

  it('an idle server sleeps until the soonest request is due: a few looks at the store, not one every interval', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-watch-'));
    const store = createSqliteStore({ path: join(dir, 'store.db') });
    let looks = 0;
    const counted = new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (name !== 'dueWork' || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          looks++;
          return value.apply(target, args);
        };
      },
    });
    const { agent } = bookstore({ store, approvalTtl: '1500ms' });
    const server = testServer({ agents: [agent], store: counted, watchIntervalMs: 50, watchIdleMs: 60_000 });
    try {
      await expect.poll(() => looks).toBeGreaterThan(0);
      const turn = await server.call('POST', '/v1/sessions/s1/messages', {
        as: 'svc',
        body: { text: 'Please cancel my order 1044.', user: 'c-100' },
      });
      const id: string = turn.json.approvals[0].id;
      const raised = Date.now();
      // Expired by the pass the watcher planned for its expiry, not by an idle look 60 s on.
      await expect
        .poll(async () => (await store.getApproval(id))?.status, { timeout: 10_000 })
        .toBe('expired');
      expect(Date.now() - raised).toBeLessThan(5000);
      // One look at start, one after the raise's event, one when due, one after the expiry's
      // event: a 50 ms interval would have made about 30 in the 1.5 s.
      expect(looks).toBeLessThanOrEqual(8);
    } finally {
      await server.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers overdue requests as expired and lets the session continue, so the customer hears it', async () => {
    let now = new Date('2026-01-01T10:00:00Z');
    const { agent } = bookstore({ now: () => now, approvalTtl: '1m' });
    const server = testServer({ agents: [agent], now: () => now });
    const seen: CountersignEvent[] = [];
    server.events.subscribe((event) => seen.push(event));
    const turn = await server.call('POST', '/v1/sessions/s1/messages', {
      as: 'svc',
      body: { text: 'Please cancel my order 1044.', user: 'c-100' },
    });
    const id = turn.json.approvals[0].id;
    now = new Date('2026-01-01T10:02:00Z');
    await server.watch();
    expect(seen.find((event) => event.type === 'approval.decided')).toMatchObject({
      requestId: id,
      verdict: 'expired',
    });
    const finished = seen.filter((event) => event.type === 'turn.finished').at(-1);
    expect(finished).toMatchObject({ session: 's1', status: 'completed' });
    const audit = (await server.call('GET', '/v1/audit', { as: 'alice' })).json as Array<{ kind: string }>;
    expect(audit.map((entry) => entry.kind)).toContain('request.expired');
  });
});

/**
 * A refund desk whose tool counts its real runs, on a store shared with "another process":
 * the customer's chat raises the request there, and the decision is committed straight
 * through the store, exactly what a decider killed right after its decision leaves behind.
 */
function stalledRefund() {
  const store = createMemoryStore();
  const refunds: number[] = [];
  const agent = createAgent({
    name: 'refunds',
    instructions: 'Refunds.',
    tools: [
      defineTool({
        name: 'send_refund',
        description: 'Send a refund.',
        input: z.object({ orderId: z.number().int() }),
        execute: ({ orderId }) => {
          refunds.push(orderId);
          return { ok: true };
        },
      }),
    ],
    // What the server's runs hear back after the refund; each chat below proposes it afresh.
    model: scriptModel([['Refund sent for order 7.']]),
  });
  let now = new Date();
  const logs: string[] = [];
  const server = testServer({ store, agents: [agent], now: () => now, log: (line) => logs.push(line) });
  const seen: CountersignEvent[] = [];
  server.events.subscribe((event) => seen.push(event));
  return {
    store,
    refunds,
    logs,
    seen,
    server,
    /** Moves the watcher's clock past the stalled-session grace. */
    later(ms = 10_000) {
      now = new Date(now.getTime() + ms);
    },
    /** Chat in another process, then a decision that is committed and never continued. */
    async decidedAndAbandoned(session: string, lease?: { owner: string; untilMs: number }) {
      const proposing = scriptModel([[{ tool: 'send_refund', args: { orderId: 7 } }]]);
      const turn = await agent.with({ store, model: proposing }).chat(session, 'Refund order 7, please.');
      const id = turn.approvals[0]!.id;
      const at = new Date().toISOString();
      const outcome = await store.decide(
        id,
        { verdict: 'approved', by: 'alice', reason: null, at, kind: 'person' },
        [],
        lease ? { lease: { ...lease, nowMs: Date.now() } } : {},
      );
      expect(outcome).toMatchObject({ won: true, leased: lease !== undefined });
      return id;
    },
  };
}

async function lastMessage(store: Store, session: string) {
  return (await store.loadMessages(session)).at(-1)?.message;
}

/** A lease owner naming a process of this host that has exited. */
function deadOwnerHere(): string {
  const { pid } = spawnSync(process.execPath, ['-e', '']);
  return `${hostname()}:${pid}:0badc0ffee00`;
}

describe('the store watcher continues stalled sessions', () => {
  it('continues a decided session nobody continued, once its grace is over: one run of the tool, and the customer hears back', async () => {
    const desk = stalledRefund();
    const id = await desk.decidedAndAbandoned('s1');
    await desk.server.watch();
    // Within the grace: a queue worker or the decider itself may still be on its way.
    expect(desk.refunds).toEqual([]);
    desk.later();
    await desk.server.watch();
    expect(desk.refunds).toEqual([7]);
    expect((await desk.store.getExecution(id))?.status).toBe('succeeded');
    expect(await desk.store.getSession('s1')).toMatchObject({ batch: null });
    expect(await lastMessage(desk.store, 's1')).toEqual({
      role: 'assistant',
      text: 'Refund sent for order 7.',
    });
    expect(desk.seen.filter((event) => event.type === 'turn.finished')).toMatchObject([
      { session: 's1', status: 'completed', reply: 'Refund sent for order 7.' },
    ]);
    expect(desk.logs).toEqual(['countersign: continued stalled session s1: completed']);

    const messages = (await desk.store.loadMessages('s1')).length;
    desk.later();
    await desk.server.watch();
    desk.later();
    await desk.server.watch();
    expect(desk.refunds).toEqual([7]);
    expect(await desk.store.loadMessages('s1')).toHaveLength(messages);
    expect(desk.logs).toHaveLength(1);
  });

  it('takes over the lease a dead decider on this host took with its decision, without waiting out the term', async () => {
    const desk = stalledRefund();
    await desk.decidedAndAbandoned('s1', { owner: deadOwnerHere(), untilMs: Date.now() + 60_000 });
    await desk.server.watch();
    desk.later();
    await desk.server.watch();
    expect(desk.refunds).toEqual([7]);
    expect(await lastMessage(desk.store, 's1')).toEqual({
      role: 'assistant',
      text: 'Refund sent for order 7.',
    });
  });

  it('leaves a session alone while a live process holds its lease, here or on another host', async () => {
    const desk = stalledRefund();
    const untilMs = Date.now() + 60_000;
    await desk.decidedAndAbandoned('here', { owner: `${hostname()}:${process.pid}:0badc0ffee00`, untilMs });
    await desk.decidedAndAbandoned('elsewhere', {
      owner: `another-host:${process.pid}:0badc0ffee00`,
      untilMs,
    });
    await desk.server.watch();
    desk.later();
    await desk.server.watch();
    expect(desk.refunds).toEqual([]);
    expect(desk.logs).toEqual([]);
    const stalled = await desk.store.listStalledSessions({ nowMs: Date.now(), includeHeld: true });
    expect(stalled.map((session) => session.id).sort()).toEqual(['elsewhere', 'here']);
  });

  it("leaves another app's stalled sessions to that app's servers", async () => {
    const desk = stalledRefund();
    const { agent: other } = bookstore({ store: desk.store });
    const turn = await other.chat('b1', 'Please cancel my order 1044.', { principal: 'c-100' });
    await desk.store.decide(turn.approvals[0]!.id, {
      verdict: 'approved',
      by: 'alice',
      reason: null,
      at: new Date().toISOString(),
      kind: 'person',
    });
    await desk.server.watch();
    desk.later();
    await desk.server.watch();
    expect(desk.logs).toEqual([]);
    expect(await orderStatus(desk.store, 1044)).not.toBe('Cancelled');
    expect(
      (await desk.store.listStalledSessions({ nowMs: Date.now() })).map((session) => session.id),
    ).toEqual(['b1']);
  });
});

describe('the store watcher expires through the due-query', () => {
  it("expires an agent's call inside a run from the due-query and continues the run: one request, one sweep", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-watch-due-'));
    const sqlite = createSqliteStore({ path: join(dir, 'store.db') });
    try {
      let now = new Date('2026-01-01T10:00:00Z');
      const agent = createAgent({
        ...bookstoreAgent.options,
        model: createDemoModel(),
        approvalTtl: '1m',
        now: () => now,
      });
      const support = createSupportWorkflow(agent);
      const dueQueries: unknown[] = [];
      // Every other method as it is; the due-query is recorded.
      const store = new Proxy(sqlite, {
        get(target, key, receiver) {
          if (key === 'listDue')
            return (query: Parameters<Store['listDue']>[0]) => {
              dueQueries.push(query);
              return target.listDue(query);
            };
          const value = Reflect.get(target, key, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const runner = createWorkflowRunner({
        workflows: [support],
        checkpoints: sqlite,
        bindAgent: (bound) => bound.with({ store: sqlite }),
        now: () => now,
      });
      const started = await runner.start('support', 's-1', {
        customer: 'c-100',
        message: 'Please cancel my order 1044.',
      });
      expect(started.status).toBe('awaiting_input');
      const server = testServer({ store, agents: [agent], workflows: [support], now: () => now });
      now = new Date('2026-01-01T10:02:00Z');
      await server.watch();
      expect(dueQueries).toContainEqual(
        expect.objectContaining({ at: now.toISOString(), kind: 'tool-call' }),
      );
      expect(dueQueries).toContainEqual(expect.objectContaining({ at: now.toISOString(), kind: 'port' }));
      expect(await sqlite.getApproval(started.requests[0]!.id)).toMatchObject({
        status: 'expired',
        run: 's-1',
      });
      const run = (await server.call('GET', '/v1/runs/s-1', { as: 'alice' })).json;
      expect(run).toMatchObject({ status: 'completed', requests: [] });
      expect(await orderStatus(sqlite, 1044)).not.toBe('Cancelled');
      await server.close();
    } finally {
      await sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a port request kept by a checkpoint store of its own expires, though the main store's dueWork finds nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-watch-apart-'));
    const sqlite = createSqliteStore({ path: join(dir, 'store.db') });
    try {
      let now = new Date('2026-01-01T10:00:00Z');
      const server = testServer({
        store: sqlite,
        workflows: [refundWorkflow],
        checkpoints: createMemoryCheckpointStore(),
        now: () => now,
      });
      const run = await server.call('POST', '/v1/runs', {
        as: 'svc',
        body: { workflow: 'refund', run: 'refund-1040', input: 1040, user: 'c-300' },
      });
      const id = run.json.requests[0].id as string;
      now = new Date('2027-06-01T10:00:00Z');
      // The premise: the SQL store holds no request, so it says nothing is due.
      expect(await sqlite.dueWork?.(now.toISOString())).toMatchObject({ expiry: false });
      await server.watch();
      // Recorded as the request's decision, not only shown as past its time.
      expect((await server.call('GET', `/v1/requests/${id}`, { as: 'alice' })).json).toMatchObject({
        status: 'expired',
        decision: { verdict: 'expired', kind: 'expiry' },
      });
      await server.close();
    } finally {
      await sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
