import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent } from '../../src/agent/create-agent.ts';
import type { Message } from '../../src/core/messages.ts';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import { defineTool, type OnNewMessage } from '../../src/tools/define-tool.ts';
import { type Step, scriptModel } from '../helpers/script-model.ts';

const refund = (onNewMessage?: OnNewMessage) =>
  defineTool({
    name: 'refund',
    description: 'Refund an order.',
    input: z.object({ orderId: z.number().int() }),
    ...(onNewMessage ? { onNewMessage } : {}),
    execute: async ({ orderId }, ctx) => {
      const done = ((await ctx.state.get('refunds')) as number[] | undefined) ?? [];
      await ctx.state.set('refunds', [...done, orderId]);
      return `Refunded order ${orderId}.`;
    },
  });

function desk(steps: Step[], options: { agent?: OnNewMessage; tool?: OnNewMessage; now?: () => Date } = {}) {
  const store = createMemoryStore();
  const agent = createAgent({
    ...(options.now ? { now: options.now } : {}),
    name: 'desk',
    instructions: '',
    tools: [refund(options.tool)],
    model: scriptModel(steps),
    store,
    ...(options.agent ? { onNewMessage: options.agent } : {}),
  });
  return { agent, store };
}

const texts = async (store: ReturnType<typeof createMemoryStore>) =>
  (await store.loadMessages('s1')).map((stored) => stored.message);
const refunds = async (store: ReturnType<typeof createMemoryStore>) =>
  ((await store.getState('desk', 'refunds')) as number[] | undefined) ?? [];

describe("onNewMessage: 'keep'", () => {
  it('a new message keeps the request waiting; the model is told it still waits, then the outcome', async () => {
    const { agent, store } = desk(
      [
        [{ tool: 'refund', args: { orderId: 7 } }],
        ['It is still with the support team.'],
        ['Your refund went through.'],
      ],
      { agent: 'keep' },
    );
    const first = await agent.chat('s1', 'refund 7 please', { by: 'cust', principal: 'cust' });
    const id = first.approvals[0]!.id;
    const update = await agent.chat('s1', 'any update?', { by: 'cust', principal: 'cust' });
    expect(update.reply).toBe('It is still with the support team.');
    expect(update.status).toBe('awaiting_approval');
    expect(update.approvals.map((view) => view.id)).toEqual([id]);
    expect((await store.getApproval(id))!.status).toBe('pending');
    const interim = (await texts(store)).find(
      (m): m is Extract<Message, { role: 'tool' }> => m.role === 'tool',
    );
    expect(String(interim?.results[0]?.output)).toMatch(
      /^Still waiting: a person has not decided this call yet/,
    );

    const decided = await agent.decide(id, { approved: true, by: 'sam' });
    expect(decided.reply).toBe('Your refund went through.');
    expect(decided.status).toBe('completed');
    expect(await refunds(store)).toEqual([7]);
    const notice = (await texts(store)).filter((m) => m.role === 'user').at(-1);
    expect(notice).toMatchObject({ role: 'user', by: 'countersign' });
    expect(notice?.role === 'user' && notice.text).toContain(
      'approved by sam and done. Result: Refunded order 7.',
    );
    expect((await store.getSession('s1'))!.batch).toBeNull();
  });

  it('a request kept waiting then rejected: the model is told why, nothing runs', async () => {
    const { agent, store } = desk([[{ tool: 'refund', args: { orderId: 7 } }], ['Waiting.'], ['Sorry.']], {
      tool: 'keep',
    });
    const id = (await agent.chat('s1', 'refund', { by: 'cust' })).approvals[0]!.id;
    await agent.chat('s1', 'hello?', { by: 'cust' });
    await agent.decide(id, { approved: false, by: 'sam', reason: 'Outside the refund window.' });
    const notice = (await texts(store)).filter((m) => m.role === 'user').at(-1);
    expect(notice?.role === 'user' && notice.text).toContain(
      'rejected by sam, so nothing was done. Reason: Outside the refund window.',
    );
    expect(await refunds(store)).toEqual([]);
  });

  it("'reject' (the default) answers the waiting request moved on", async () => {
    const { agent, store } = desk([[{ tool: 'refund', args: { orderId: 7 } }], ['ok']]);
    const id = (await agent.chat('s1', 'refund', { by: 'cust' })).approvals[0]!.id;
    await agent.chat('s1', 'never mind', { by: 'cust' });
    expect((await store.getApproval(id))!.decision?.kind).toBe('moved-on');
  });

  it("a tool's 'reject' overrides the agent's 'keep'", async () => {
    const { agent, store } = desk([[{ tool: 'refund', args: { orderId: 7 } }], ['ok']], {
      agent: 'keep',
      tool: 'reject',
    });
    const id = (await agent.chat('s1', 'refund', { by: 'cust' })).approvals[0]!.id;
    await agent.chat('s1', 'never mind', { by: 'cust' });
    expect((await store.getApproval(id))!.decision?.kind).toBe('moved-on');
  });

  it('a new call while one is kept waiting: both wait, and each outcome reaches the model', async () => {
    const { agent, store } = desk(
      [
        [{ tool: 'refund', args: { orderId: 7 } }],
        [{ tool: 'refund', args: { orderId: 8 } }],
        ['Order 8 refunded.'],
        ['Order 7 refunded too.'],
      ],
      { agent: 'keep' },
    );
    const a = (await agent.chat('s1', 'refund 7', { by: 'cust' })).approvals[0]!.id;
    const second = await agent.chat('s1', 'and 8', { by: 'cust' });
    expect(second.approvals).toHaveLength(2);
    const b = second.approvals.find((view) => view.id !== a)!.id;
    expect((await agent.decide(b, { approved: true, by: 'sam' })).reply).toBe('Order 8 refunded.');
    expect((await agent.decide(a, { approved: true, by: 'sam' })).reply).toBe('Order 7 refunded too.');
    expect(await refunds(store)).toEqual([8, 7]);
    // The notice is no message of the customer's: it raised nothing.
    expect((await store.getApproval(b))!.raisedBy).toBe('cust');
  });

  it('a kept request that expires: the model is told on the next run, nothing runs', async () => {
    let clock = Date.parse('2026-12-01T10:00:00Z');
    const { agent, store } = desk(
      [[{ tool: 'refund', args: { orderId: 7 } }], ['Waiting.'], ['It expired.']],
      {
        agent: 'keep',
        now: () => new Date(clock),
      },
    );
    const id = (await agent.chat('s1', 'refund', { by: 'cust' })).approvals[0]!.id;
    await agent.chat('s1', 'any update?', { by: 'cust' });
    clock += 25 * 3_600_000;
    const later = await agent.resume('s1');
    expect(later.reply).toBe('It expired.');
    expect((await store.getApproval(id))!.status).toBe('expired');
    const notice = (await texts(store)).filter((m) => m.role === 'user').at(-1);
    expect(notice?.role === 'user' && notice.text).toContain(
      'expired without a decision, so nothing was done.',
    );
    expect(await refunds(store)).toEqual([]);
    expect((await store.getSession('s1'))!.batch).toBeNull();
  });
});
