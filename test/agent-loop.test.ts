import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, type DecideInput } from '../src/agent/create-agent.ts';
import { parseExportKeys } from '../src/agent/export-keys.ts';
import { listExecutions, listPending, showRequest } from '../src/agent/queries.ts';
import { exportSession, importSession } from '../src/agent/session-transfer.ts';
import { DEFAULT_REJECTION_REASON, MOVED_ON_REASON } from '../src/core/approval.ts';
import { sha256Hex } from '../src/core/canonical-json.ts';
import { createDemoModel } from '../src/model/demo-model.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';
import { defineTool } from '../src/tools/define-tool.ts';
import { bookstore, orderStatus } from './helpers/bookstore-agent.ts';
import { recordingModel, toolResultsSeen } from './helpers/recording-model.ts';

describe('the agent loop on the bookstore', () => {
  it('stops at cancel_order with the exact call stored, and runs it once approved', async () => {
    const { agent, store } = bookstore();
    const first = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    expect(first.status).toBe('awaiting_approval');
    expect(first.approvals).toHaveLength(1);
    const request = first.approvals[0]!;
    expect(request).toMatchObject({ tool: 'cancel_order', args: { orderId: 1044 }, session: 's1' });
    expect(request.id).toMatch(/^apr_[a-z2-7]{32}$/);
    expect(request.argsHash).toBe(sha256Hex('{"orderId":1044}'));
    expect(request.effect).toContain('total 51.90');
    expect(await orderStatus(store, 1044)).toBeUndefined();

    const done = await agent.approve(request.id, { by: 'alice' });
    expect(done.status).toBe('completed');
    expect(done.reply).toContain('1044');
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
    const executions = await listExecutions(store);
    expect(executions).toMatchObject([{ requestId: request.id, tool: 'cancel_order', status: 'succeeded' }]);
    expect((await showRequest(store, request.id)).decision).toMatchObject({
      verdict: 'approved',
      by: 'alice',
    });
  });

  it('passes a rejection reason to the model, and the default one when none is given', async () => {
    const model = recordingModel(createDemoModel());
    const { agent, store } = bookstore({ model });
    const first = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    const reason = 'Support must call the customer before cancelling. Do not retry.';
    const done = await agent.reject(first.approvals[0]!.id, { reason, by: 'bob' });
    expect(done.status).toBe('completed');
    expect(toolResultsSeen(model.calls).join()).toContain(reason);
    expect(done.reply).toContain(reason);
    expect(await orderStatus(store, 1044)).toBeUndefined();
    expect(await listExecutions(store)).toEqual([]);

    const again = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    await agent.reject(again.approvals[0]!.id, { by: 'bob' });
    expect(toolResultsSeen(model.calls).join()).toContain(DEFAULT_REJECTION_REASON);
  });

  it('a second decision is refused with the first one named, and nothing runs twice', async () => {
    const { agent, store } = bookstore();
    const first = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    const id = first.approvals[0]!.id;
    await agent.approve(id, { by: 'alice' });
    await expect(agent.approve(id, { by: 'bob' })).rejects.toMatchObject({
      code: 'ALREADY_DECIDED',
      message: expect.stringContaining('alice'),
    });
    await expect(agent.reject(id, { by: 'bob', reason: 'no' })).rejects.toMatchObject({
      code: 'ALREADY_DECIDED',
    });
    expect(await listExecutions(store)).toHaveLength(1);
  });

  it('holds a read proposed beside a write, and runs it even when the write is rejected', async () => {
    const model = recordingModel(createDemoModel());
    const { agent } = bookstore({ model });
    const first = await agent.chat('s1', "What's the status of order 1043? And cancel order 1044.", {
      principal: 'c-100',
    });
    expect(first.status).toBe('awaiting_approval');
    expect(first.approvals.map((a) => a.tool)).toEqual(['cancel_order']);
    const callsBefore = model.calls.length;
    const done = await agent.reject(first.approvals[0]!.id, { reason: 'Not today.', by: 'bob' });
    expect(model.calls.length).toBe(callsBefore + 1);
    const seen = toolResultsSeen(model.calls).join();
    expect(seen).toContain('Order 1043 is Shipped');
    expect(seen).toContain('Not today.');
    expect(done.reply).toContain('1043');
  });

  it("with onNewMessage 'reject', a new message answers the waiting request as moved on, in the same run", async () => {
    const model = recordingModel(createDemoModel());
    const { agent, store } = bookstore({ model, onNewMessage: 'reject' });
    const first = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    const next = await agent.chat('s1', "What's the status of order 1044?", { principal: 'c-100' });
    expect(next.status).toBe('completed');
    expect(next.reply).toContain('Processing');
    expect(toolResultsSeen(model.calls).join()).toContain(MOVED_ON_REASON);
    expect((await showRequest(store, first.approvals[0]!.id)).decision).toMatchObject({
      kind: 'moved-on',
      verdict: 'rejected',
    });
    expect(await listPending(store)).toEqual([]);
    await expect(agent.approve(first.approvals[0]!.id)).rejects.toMatchObject({ code: 'ALREADY_DECIDED' });
  });

  it("the bookstore's support desk keeps the request waiting through a new message ('keep'), then reports the outcome", async () => {
    const model = recordingModel(createDemoModel());
    const { agent, store } = bookstore({ model });
    const first = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100', by: 'c-100' });
    const next = await agent.chat('s1', "What's the status of order 1044?", {
      principal: 'c-100',
      by: 'c-100',
    });
    expect(next.status).toBe('awaiting_approval');
    expect(next.reply).toContain('Processing');
    expect(toolResultsSeen(model.calls).join()).toContain('Still waiting');
    expect((await listPending(store)).map((view) => view.id)).toEqual([first.approvals[0]!.id]);
    const done = await agent.approve(first.approvals[0]!.id, { by: 'sam' });
    expect(done.status).toBe('completed');
    expect(done.reply).toContain('Order 1044 has been cancelled.');
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
  });

  it("refuses another customer's order without asking anyone", async () => {
    const { agent, store } = bookstore();
    const result = await agent.chat('s1', 'Please cancel my order 1050.', { principal: 'c-100' });
    expect(result.status).toBe('completed');
    expect(result.approvals).toEqual([]);
    expect(result.reply).toContain('not one of this customer');
    expect(await listPending(store)).toEqual([]);
  });

  it('turns invalid model arguments into an error the model reads and corrects', async () => {
    const model = recordingModel(createDemoModel());
    const { agent } = bookstore({ model });
    const result = await agent.chat('s1', 'Please cancel my order 1044 [[bad-args]]', { principal: 'c-100' });
    expect(toolResultsSeen(model.calls).join()).toContain('Invalid arguments for cancel_order');
    expect(result.status).toBe('awaiting_approval');
    expect(result.approvals).toHaveLength(1);
    expect(result.approvals[0]!.args).toEqual({ orderId: 1044 });
  });

  it('refuses a different principal on an existing session', async () => {
    const { agent } = bookstore();
    await agent.chat('s1', 'hello', { principal: 'c-100' });
    await expect(agent.chat('s1', 'hello', { principal: 'c-200' })).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
  });

  it('answers unknown ids and bad input with typed errors', async () => {
    const { agent, store } = bookstore();
    await expect(agent.approve('apr_nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(agent.resume('nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(agent.chat('bad id!', 'hi')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(agent.chat('s1', '   ')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(showRequest(store, 'apr_nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('expires a request: no approval after its time, and the model is told', async () => {
    let now = new Date('2026-01-01T00:00:00Z');
    const model = recordingModel(createDemoModel());
    const { agent, store } = bookstore({ model, now: () => now, approvalTtl: '2s' });
    const first = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    now = new Date('2026-01-01T00:00:03Z');
    expect(await listPending(store, {}, now)).toEqual([]);
    await expect(agent.approve(first.approvals[0]!.id)).rejects.toMatchObject({ code: 'EXPIRED' });
    const resumed = await agent.resume('s1');
    expect(resumed.status).toBe('completed');
    expect(toolResultsSeen(model.calls).join()).toContain('expired without a decision');
    expect(await orderStatus(store, 1044)).toBeUndefined();
  });

  it('caps model steps in a turn with a clear error, and the session still answers', async () => {
    const loop = defineTool({
      name: 'ping',
      description: 'ping',
      input: z.object({}),
      approval: 'never',
      execute: () => 'pong',
    });
    let n = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async () => ({
        content: [{ type: 'tool-call', toolCallId: `c${++n}`, toolName: 'ping', input: '{}' }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: {
          inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 1, text: 1, reasoning: 0 },
        },
        warnings: [],
      }),
    });
    const agent = createAgent({
      name: 'looper',
      instructions: '',
      tools: [loop],
      model,
      store: createMemoryStore(),
      maxSteps: 3,
    });
    await expect(agent.chat('s1', 'go')).rejects.toMatchObject({ code: 'STEP_LIMIT' });
    expect(n).toBe(3);
  });

  it('exports a waiting session compactly and approves it in another store, binding intact', async () => {
    const { agent } = bookstore();
    const first = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    const keys = parseExportKeys('k1:0123456789abcdef0123456789abcdef');
    expect(
      Buffer.byteLength(JSON.stringify(await exportSession(agent.options.store!, 's1'))),
    ).toBeLessThanOrEqual(1536);
    const exported = await exportSession(agent.options.store!, 's1', { keys });

    const other = bookstore();
    await importSession(other.store, JSON.parse(JSON.stringify(exported)), { keys });
    expect((await listPending(other.store)).map((a) => a.id)).toEqual([first.approvals[0]!.id]);
    const done = await other.agent.approve(first.approvals[0]!.id);
    expect(done.status).toBe('completed');
    expect(await orderStatus(other.store, 1044)).toBe('Cancelled');

    const altered = JSON.parse(JSON.stringify(exported));
    altered.session.batch.calls[0].args.orderId = 1043;
    await expect(importSession(bookstore().store, altered, { keys })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    await expect(importSession(bookstore().store, { schemaVersion: 99 })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    await expect(importSession(other.store, exported, { keys })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });

  it('arguments sent with a decision are ignored — the stored call runs — and the attempt is audited', async () => {
    const { agent, store } = bookstore();
    const first = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    const tampered = {
      approved: true,
      by: 'mallory',
      args: { orderId: 1043 },
      tool: 'refund',
    } as DecideInput;
    await agent.decide(first.approvals[0]!.id, tampered);
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
    expect(await orderStatus(store, 1043)).toBeUndefined();
    expect((await listExecutions(store)).map((e) => e.args)).toEqual([{ orderId: 1044 }]);
    const ignored = (await store.listAudit()).find((entry) => entry.kind === 'tamper.ignored');
    expect(ignored).toMatchObject({ actor: 'mallory', data: { fields: ['args', 'tool'] } });
    expect(String(ignored?.data.sent)).toContain('1043');
  });

  it('a logged tool that needs no approval still leaves an audit entry', async () => {
    const { agent, store } = bookstore();
    const result = await agent.chat('s1', 'Add b-1 to my cart.', { principal: 'c-100' });
    expect(result.status).toBe('completed');
    const logged = (await store.listAudit()).filter((entry) => entry.kind === 'call.logged');
    expect(logged).toMatchObject([{ data: { tool: 'add_to_cart', args: '{"bookId":"b-1","quantity":1}' } }]);
  });

  it('keeps its session lease through a model call longer than the lease term', async () => {
    const slow = createDemoModel();
    const model = {
      ...slow,
      specificationVersion: 'v4' as const,
      provider: slow.provider,
      modelId: slow.modelId,
      supportedUrls: {},
      doStream: slow.doStream.bind(slow),
      async doGenerate(options: Parameters<typeof slow.doGenerate>[0]) {
        await new Promise((resolve) => setTimeout(resolve, 400));
        return slow.doGenerate(options);
      },
    };
    const store = createMemoryStore();
    const { agent } = bookstore({ store, model });
    const shortLease = createAgent({ ...agent.options, leaseMs: 150, busyWaitMs: 50 });
    const running = shortLease.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    await new Promise((resolve) => setTimeout(resolve, 250));
    // Past the first term, the session is still held: a second run gives up with SESSION_BUSY.
    await expect(shortLease.resume('s1')).rejects.toMatchObject({ code: 'SESSION_BUSY' });
    expect((await running).status).toBe('awaiting_approval');
  });

  it('a reply belongs to its turn: a turn that stops at a request without words has reply null', async () => {
    const { agent } = bookstore();
    await agent.chat('s1', 'What is the status of order 1043?', { principal: 'c-100' });
    const second = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    expect(second.status).toBe('awaiting_approval');
    expect(second.reply).toBeNull();
    const idle = await bookstore();
    await idle.agent.chat('s2', 'What is the status of order 1043?', { principal: 'c-100' });
    expect((await idle.agent.resume('s2')).reply).toContain('1043');
  });
});
