import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { bookstoreAgent, supportWorkflow } from '../../examples/bookstore/app.ts';
import { createAgent } from '../../src/agent/create-agent.ts';
import { verifyAuditChain } from '../../src/core/audit.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import { createSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { agentExecutor } from '../../src/workflow/agent-executor.ts';
import { defineWorkflow } from '../../src/workflow/define-workflow.ts';
import { createWorkflowRunner, type WorkflowRunner } from '../../src/workflow/runner.ts';
import { orderStatus } from '../helpers/bookstore-agent.ts';

const cancel1044 = { customer: 'c-100', message: 'Please cancel my order 1044.' };

/** The support workflow, but its prompt names no principal: the run's customer is the session's. */
function createSupportWorkflowWithoutPrincipal() {
  const assistant = agentExecutor({
    id: 'assistant',
    agent: bookstoreAgent,
    input: z.object({ customer: z.string(), message: z.string() }),
    prompt: ({ message }) => ({ text: message }),
  });
  return defineWorkflow({ name: 'support-plain', version: 1, stateNamespace: 'bookstore' })
    .start(assistant)
    .output(assistant)
    .build();
}

describe('an agent inside a workflow', () => {
  let dir: string;
  let store: SqliteStore;
  let runner: WorkflowRunner;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'countersign-agent-wf-'));
    store = createSqliteStore({ path: join(dir, 'store.db') });
    runner = createWorkflowRunner({
      workflows: [supportWorkflow],
      checkpoints: store,
      bindAgent: (agent) => agent.with({ store, model: createDemoModel() }),
    });
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function waiting() {
    const view = await runner.start('support', 's-1', cancel1044);
    expect(view.status).toBe('awaiting_input');
    expect(view.requests).toHaveLength(1);
    return { view, request: view.requests[0]! };
  }

  it('waits on the approval port with the stored call as the request, then runs it once on approval', async () => {
    const { request } = await waiting();
    const pending = await store.listApprovals({ status: 'pending' });
    expect(pending).toHaveLength(1);
    expect(request).toMatchObject({
      port: 'approval',
      data: {
        approval: pending[0]!.id,
        session: 'wf.s-1.assistant',
        tool: 'cancel_order',
        args: { orderId: 1044 },
        argsHash: pending[0]!.argsHash,
        effect: expect.stringContaining('Cancel order 1044'),
      },
    });
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');

    // Arguments sent along with the answer are not part of the port's answer and change nothing.
    const done = await runner.respond(
      's-1',
      request.id,
      { approved: true, args: { orderId: 1043 } },
      { by: 'alice' },
    );
    expect(done.status).toBe('completed');
    expect(done.outputs).toEqual([{ session: 'wf.s-1.assistant', reply: expect.stringContaining('1044') }]);
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
    expect(await orderStatus(store, 1043)).not.toBe('Cancelled');
    expect(await store.listExecutions()).toMatchObject([
      { tool: 'cancel_order', args: { orderId: 1044 }, status: 'succeeded' },
    ]);
    const decided = (await store.listAudit()).filter((entry) => entry.kind === 'request.decided');
    expect(decided).toMatchObject([{ actor: 'alice', data: { verdict: 'approved', tool: 'cancel_order' } }]);

    await expect(runner.respond('s-1', request.id, { approved: true }, { by: 'bob' })).rejects.toMatchObject({
      code: 'ALREADY_DECIDED',
    });
    expect(await store.listExecutions()).toHaveLength(1);
  });

  it('a rejection reaches the agent with its reason and nothing runs', async () => {
    const { request } = await waiting();
    const done = await runner.respond(
      's-1',
      request.id,
      { approved: false, reason: 'Support must call the customer first.' },
      { by: 'alice' },
    );
    expect(done.status).toBe('completed');
    expect(await store.listExecutions()).toEqual([]);
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
    expect((await store.listApprovals())[0]).toMatchObject({
      status: 'rejected',
      decision: { by: 'alice', reason: 'Support must call the customer first.' },
    });
  });

  it("a call decided on the agent path first: the run's answer is ALREADY_DECIDED naming who, and resume carries on", async () => {
    const { request } = await waiting();
    const agent = bookstoreAgent.with({ store, model: createDemoModel() });
    await agent.approve((request.data as { approval: string }).approval, { by: 'carol' });
    // Not a 200 that does nothing: the answer is refused, saying who decided.
    await expect(
      runner.respond('s-1', request.id, { approved: false, reason: 'too late' }, { by: 'dave' }),
    ).rejects.toMatchObject({
      code: 'ALREADY_DECIDED',
      message: expect.stringContaining('approved by carol'),
    });
    const done = await runner.resume('s-1');
    expect(done.status).toBe('completed');
    expect(await store.listExecutions()).toHaveLength(1);
    expect((await store.listApprovals())[0]?.decision?.by).toBe('carol');
  });

  it('an answer to a call already rejected is ALREADY_DECIDED naming who rejected it; nothing runs', async () => {
    const { request } = await waiting();
    const agent = bookstoreAgent.with({ store, model: createDemoModel() });
    await agent.reject(request.id, { by: 'carol', reason: 'Call the customer first.' });
    await expect(runner.respond('s-1', request.id, { approved: true }, { by: 'dave' })).rejects.toMatchObject(
      {
        code: 'ALREADY_DECIDED',
        message: expect.stringContaining('rejected by carol'),
      },
    );
    await expect(runner.answer(request.id, { approved: true }, { by: 'dave' })).rejects.toMatchObject({
      code: 'ALREADY_DECIDED',
    });
    expect(await runner.resume('s-1')).toMatchObject({ status: 'completed' });
    expect(await store.listExecutions()).toEqual([]);
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
  });

  it("is one request, not two: the call's own row carries the run; agent.decide then resume continues both", async () => {
    const { request } = await waiting();
    const rows = await store.listApprovals();
    // No port row besides the call: the run waits on the call itself, under its id.
    expect(rows).toMatchObject([
      { id: request.id, kind: 'tool-call', run: 's-1', tool: 'cancel_order', status: 'pending' },
    ]);
    expect(await store.listApprovals({ run: 's-1' })).toHaveLength(1);
    const agent = bookstoreAgent.with({ store, model: createDemoModel() });
    await agent.decide(request.id, { approved: true, by: 'alice' });
    const done = await runner.resume('s-1');
    expect(done).toMatchObject({ status: 'completed', requests: [] });
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
    expect(await store.listExecutions()).toHaveLength(1);
  });

  it("the wrapped call's customer may not decide it, on either path, even when the prompt names no principal", async () => {
    const plain = createSupportWorkflowWithoutPrincipal();
    const own = createWorkflowRunner({
      workflows: [plain],
      checkpoints: store,
      bindAgent: (agent) => agent.with({ store, model: createDemoModel() }),
    });
    const view = await own.start('support-plain', 's-9', cancel1044, { by: 'desk', customer: 'c-100' });
    const id = view.requests[0]!.id;
    expect(await store.getApproval(id)).toMatchObject({ customer: 'c-100', raisedBy: 'desk', run: 's-9' });
    await expect(own.answer(id, { approved: true }, { by: 'c-100' })).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    const agent = bookstoreAgent.with({ store, model: createDemoModel() });
    await expect(agent.decide(id, { approved: true, by: 'c-100' })).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    await expect(own.answer(id, { approved: true }, { by: 'desk' })).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    expect((await store.getApproval(id))?.status).toBe('pending');
    expect((await own.answer(id, { approved: true }, { by: 'alice' })).status).toBe('completed');
  });

  it('running the first superstep again (a branch from the start) does not send the message twice', async () => {
    const { request } = await waiting();
    const [first] = await runner.history('s-1');
    const branch = await runner.resume('s-1', { from: first!.checkpointId });
    expect(branch.status).toBe('awaiting_input');
    // The same stored call is waited on again on the branch, under its own id: one request.
    expect(branch.requests).toMatchObject([
      { data: { approval: (request.data as { approval: string }).approval } },
    ]);
    expect(branch.requests[0]!.id).toBe(request.id);
    const users = (await store.loadMessages('wf.s-1.assistant')).filter(
      (stored) => stored.message.role === 'user',
    );
    expect(users).toHaveLength(1);
    expect(await store.listApprovals()).toHaveLength(1);
  });

  it("the run's request expires with the agent's call: the agent is told, the run completes, nothing runs", async () => {
    let clock = Date.parse('2026-03-02T09:00:00.000Z');
    const now = () => new Date(clock);
    // The same agent, on a clock the test moves and with a one-minute approval TTL.
    const agent = createAgent({
      ...bookstoreAgent.options,
      store,
      model: createDemoModel(),
      now,
      approvalTtl: '1m',
    });
    const timed = createWorkflowRunner({
      workflows: [supportWorkflow],
      checkpoints: store,
      bindAgent: () => agent,
      now,
    });
    const started = await timed.start('support', 's-3', cancel1044);
    const request = started.requests[0]!;
    const approval = (await store.listApprovals({ status: 'pending' }))[0]!;
    expect(request.expiresAt).toBe(approval.expiresAt);
    expect(request.expiresAt).toBe(new Date(clock + 60_000).toISOString());

    clock += 61_000;
    await expect(timed.respond('s-3', request.id, { approved: true }, { by: 'alice' })).rejects.toMatchObject(
      {
        code: 'EXPIRED',
      },
    );
    const done = await timed.resume('s-3');
    expect(done).toMatchObject({
      status: 'completed',
      outputs: [{ session: 'wf.s-3.assistant', reply: expect.stringContaining('Expired, not done') }],
    });
    expect(await store.getApproval(approval.id)).toMatchObject({ status: 'expired' });
    expect(await store.listExecutions()).toEqual([]);
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
    const kinds = (await store.listAudit()).map((entry) => entry.kind);
    // One request: the call's own entries, no second family for the run.
    expect(kinds).toEqual(['request.raised', 'request.expired']);
    expect(kinds).not.toContain('request.decided');
    expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
  });

  it('with a file checkpoint store the agent has no store of its own: CONFIG_ERROR, the run fails clearly', async () => {
    const { createFileCheckpointStore } = await import('../../src/store/fs/file-checkpoint-store.ts');
    const { openStore } = await import('../../src/store/open-store.ts');
    const files = createWorkflowRunner({
      workflows: [supportWorkflow],
      checkpoints: createFileCheckpointStore({ dir: join(dir, 'files') }),
      bindAgent: async (agent) =>
        agent.with({ store: await openStore(`file:${join(dir, 'files')}`), model: createDemoModel() }),
    });
    expect(await files.start('support', 's-2', cancel1044)).toMatchObject({
      status: 'failed',
      error: {
        code: 'CONFIG_ERROR',
        executor: 'assistant',
        message: expect.stringContaining('workflow runs only'),
      },
    });
  });
});
