import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { addToShoppingList, getShoppingList } from '../../examples/kitchen/app.ts';
import { createAgent } from '../../src/agent/create-agent.ts';
import { CountersignError } from '../../src/core/errors/countersign-error.ts';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import type { Store } from '../../src/store/store.ts';
import { defineTool } from '../../src/tools/define-tool.ts';
import { type Step, scriptModel } from '../helpers/script-model.ts';

const add = (item: string, quantity: string) => ({ tool: 'add_to_shopping_list', args: { item, quantity } });

function kitchen(steps: Step[], store: Store = createMemoryStore()) {
  const agent = createAgent({
    name: 'kitchen',
    instructions: '',
    tools: [getShoppingList, addToShoppingList],
    model: scriptModel(steps),
    store,
    selfApproval: true,
  });
  return { agent, store };
}

async function list(store: Store, agent = 'kitchen'): Promise<string[]> {
  return ((await store.getState(agent, 'shopping-list')) as string[] | undefined) ?? ['milk', 'bread'];
}

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (CountersignError.is(error)) return error.code;
    throw error;
  }
  return 'no error';
}

/** A refund tool routed by amount: a manager above 100, two managers above 500. */
const refund = defineTool({
  name: 'refund',
  description: 'Refund an amount.',
  input: z.object({ orderId: z.number().int(), amount: z.number().positive() }),
  editable: z.object({ amount: z.number().positive().max(1000) }),
  approval: ({ amount }) =>
    amount > 500 ? { role: 'manager', approvals: 2 } : amount > 100 ? { role: 'manager' } : true,
  effect: ({ orderId, amount }) => `Refund ${amount.toFixed(2)} on order ${orderId}.`,
  execute: async ({ orderId, amount }, ctx) => {
    const done = ((await ctx.state.get('refunds')) as string[] | undefined) ?? [];
    await ctx.state.set('refunds', [...done, `${orderId}:${amount}`]);
    return { ok: true, refunded: amount };
  },
});

function desk(steps: Step[], store: Store = createMemoryStore()) {
  const agent = createAgent({
    name: 'desk',
    instructions: '',
    tools: [refund],
    model: scriptModel(steps),
    store,
  });
  return { agent, store };
}

const refunds = async (store: Store) =>
  ((await store.getState('desk', 'refunds')) as string[] | undefined) ?? [];

describe('edit, then approve', () => {
  it('runs the edited call: new hash and preview, both argument sets and the diff audited, the model told', async () => {
    const { agent, store } = kitchen([[add('eggs', '12')], ['Added.']]);
    const turn = await agent.chat('s1', 'eggs', { by: 'pat' });
    const id = turn.approvals[0]!.id;
    expect(turn.approvals[0]!.editable).toEqual(['quantity']);
    await agent.decide(id, { approved: true, by: 'pat', edit: { quantity: '6' } });
    expect(await list(store)).toEqual(['milk', 'bread', '6 eggs']);
    const request = (await store.getApproval(id))!;
    expect(request.args).toEqual({ item: 'eggs', quantity: '12' });
    expect(request.decision?.edit).toMatchObject({
      args: { item: 'eggs', quantity: '6' },
      diff: [{ field: 'quantity', from: '12', to: '6' }],
      by: 'pat',
    });
    expect(request.decision?.edit?.effect).toContain('Add "6 eggs"');
    expect(request.decision?.edit?.argsHash).not.toBe(request.argsHash);
    const decided = (await store.listAudit()).find((entry) => entry.kind === 'request.decided')!;
    expect(decided.data).toMatchObject({
      args: request.argsJson,
      edited: { args: '{"item":"eggs","quantity":"6"}', diff: [{ field: 'quantity', from: '12', to: '6' }] },
    });
    const started = (await store.listAudit()).find((entry) => entry.kind === 'execution.started')!;
    expect(started.data).toMatchObject({ argsHash: request.decision?.edit?.argsHash });
    const messages = await store.loadMessages('s1');
    const result = messages.map((m) => m.message).find((m) => m.role === 'tool');
    expect(JSON.stringify(result)).toContain('approved this call with changes (quantity \\"12\\" → \\"6\\")');
  });

  it('refuses a field that is not editable, a change of tool, and bad values, deciding nothing', async () => {
    const { agent, store } = kitchen([[add('eggs', '12')]]);
    const id = (await agent.chat('s1', 'eggs')).approvals[0]!.id;
    expect(await code(agent.decide(id, { approved: true, edit: { item: 'caviar' } }))).toBe('NOT_EDITABLE');
    expect(await code(agent.decide(id, { approved: true, edit: { tool: 'refund' } }))).toBe('NOT_EDITABLE');
    expect(await code(agent.decide(id, { approved: true, edit: { quantity: '' } }))).toBe('INVALID_INPUT');
    expect(await code(agent.decide(id, { approved: false, edit: { quantity: '6' } }))).toBe('INVALID_INPUT');
    // An edit applies to this call only: it cannot be remembered for the session.
    expect(await code(agent.decide(id, { approved: true, edit: { quantity: '6' }, remember: 'tool' }))).toBe(
      'INVALID_INPUT',
    );
    expect(await store.listRules({ session: 's1' })).toEqual([]);
    expect((await store.getApproval(id))!.status).toBe('pending');
    expect(await list(store)).toEqual(['milk', 'bread']);
  });

  it('an edit that raises an amount re-routes the request to a manager instead of running it', async () => {
    const { agent, store } = desk([[{ tool: 'refund', args: { orderId: 7, amount: 40 } }], ['ok']]);
    const id = (await agent.chat('s1', 'refund please', { by: 'cust', principal: 'cust' })).approvals[0]!.id;
    const turn = await agent.decide(id, {
      approved: true,
      by: 'sam',
      roles: ['support'],
      edit: { amount: 240 },
    });
    expect(turn.status).toBe('awaiting_approval');
    const waiting = (await store.getApproval(id))!;
    expect(waiting).toMatchObject({
      status: 'pending',
      requiredRole: 'manager',
      approvalsNeeded: 1,
      approvals: [],
    });
    expect(waiting.edit?.args).toEqual({ orderId: 7, amount: 240 });
    expect(await refunds(store)).toEqual([]);
    // Support may not decide it any more; a manager approves the edited call.
    expect(await code(agent.decide(id, { approved: true, by: 'sam', roles: ['support'] }))).toBe('FORBIDDEN');
    await agent.decide(id, { approved: true, by: 'meg', roles: ['manager'] });
    expect(await refunds(store)).toEqual(['7:240']);
    expect((await store.listAudit()).map((entry) => entry.kind)).toContain('request.approval-added');
  });

  it('an editable zod schema checks the new values', async () => {
    const { agent } = desk([[{ tool: 'refund', args: { orderId: 7, amount: 40 } }]]);
    const id = (await agent.chat('s1', 'refund', { by: 'cust' })).approvals[0]!.id;
    expect(await code(agent.decide(id, { approved: true, by: 'sam', edit: { amount: 5000 } }))).toBe(
      'NOT_EDITABLE',
    );
  });
});

describe('routing and quorum', () => {
  it('two distinct managers approve; the call runs once, after the second', async () => {
    const { agent, store } = desk([[{ tool: 'refund', args: { orderId: 9, amount: 800 } }], ['Refunded.']]);
    const id = (await agent.chat('s1', 'big refund', { by: 'cust', principal: 'cust' })).approvals[0]!.id;
    expect((await store.getApproval(id))!).toMatchObject({ requiredRole: 'manager', approvalsNeeded: 2 });
    expect(await code(agent.decide(id, { approved: true, by: 'sam', roles: ['support'] }))).toBe('FORBIDDEN');
    const first = await agent.decide(id, { approved: true, by: 'meg', roles: ['manager'] });
    expect(first.status).toBe('awaiting_approval');
    expect(await refunds(store)).toEqual([]);
    // The same approver twice, in another case: refused.
    expect(await code(agent.decide(id, { approved: true, by: 'MEG', roles: ['manager'] }))).toBe('FORBIDDEN');
    // The raiser and the customer never count.
    expect(await code(agent.decide(id, { approved: true, by: 'cust', roles: ['manager'] }))).toBe(
      'FORBIDDEN',
    );
    await agent.decide(id, { approved: true, by: 'max', roles: ['manager'] });
    expect(await refunds(store)).toEqual(['9:800']);
    const decided = (await store.getApproval(id))!;
    expect(decided.decision?.approvals?.map((a) => a.by)).toEqual(['meg', 'max']);
    expect(await code(agent.decide(id, { approved: true, by: 'moe', roles: ['manager'] }))).toBe(
      'ALREADY_DECIDED',
    );
  });

  it('any rejection vetoes, keeping the approvals it overrode', async () => {
    const { agent, store } = desk([[{ tool: 'refund', args: { orderId: 9, amount: 800 } }], ['No refund.']]);
    const id = (await agent.chat('s1', 'big refund', { by: 'cust' })).approvals[0]!.id;
    await agent.decide(id, { approved: true, by: 'meg', roles: ['manager'] });
    await agent.decide(id, { approved: false, by: 'max', roles: ['manager'], reason: 'Too much.' });
    const decided = (await store.getApproval(id))!;
    expect(decided.status).toBe('rejected');
    expect(decided.decision?.approvals?.map((a) => a.by)).toEqual(['meg']);
    expect(await refunds(store)).toEqual([]);
  });

  it('two approvers racing for the last slot: the call runs once', async () => {
    const store = createMemoryStore();
    const { agent } = desk([[{ tool: 'refund', args: { orderId: 9, amount: 800 } }], ['ok'], ['ok']], store);
    const id = (await agent.chat('s1', 'big refund', { by: 'cust' })).approvals[0]!.id;
    await agent.decide(id, { approved: true, by: 'meg', roles: ['manager'] });
    const results = await Promise.allSettled([
      agent.decide(id, { approved: true, by: 'max', roles: ['manager'] }),
      agent.decide(id, { approved: true, by: 'moe', roles: ['manager'] }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(await refunds(store)).toEqual(['9:800']);
  });
});
