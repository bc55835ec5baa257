import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { addToShoppingList, getShoppingList } from '../../examples/kitchen/app.ts';
import { createAgent } from '../../src/agent/create-agent.ts';
import { showRequest } from '../../src/agent/queries.ts';
import { CountersignError } from '../../src/core/errors/countersign-error.ts';
import { createSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { defineTool } from '../../src/tools/define-tool.ts';
import { type Step, scriptModel } from '../helpers/script-model.ts';

/**
 * Rows edited on disk (a real SQLite file) while a request waits: the effect preview, an
 * approver's pending edit, the routing (role, quorum size), the editable fields. Each is
 * refused or judged again from code; nothing runs that a person did not approve.
 */
let dir: string | null = null;
let store: SqliteStore | null = null;
afterEach(async () => {
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  store = dir = null;
});

function open() {
  dir = mkdtempSync(join(tmpdir(), 'countersign-rows-'));
  const path = join(dir, 'store.db');
  store = createSqliteStore({ path });
  const edit = (sql: string) => {
    const db = new DatabaseSync(path);
    try {
      return Number(db.prepare(sql).run().changes);
    } finally {
      db.close();
    }
  };
  return { store, edit };
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

const refund = defineTool({
  name: 'refund',
  description: 'Refund an amount.',
  input: z.object({ orderId: z.number().int(), amount: z.number().positive() }),
  editable: ['amount'],
  approval: ({ amount }) =>
    amount > 500 ? { role: 'manager', approvals: 2 } : amount > 100 ? { role: 'manager' } : true,
  effect: ({ orderId, amount }) => `Refund ${amount.toFixed(2)} on order ${orderId}.`,
  execute: async ({ orderId, amount }, ctx) => {
    const done = ((await ctx.state.get('refunds')) as string[] | undefined) ?? [];
    await ctx.state.set('refunds', [...done, `${orderId}:${amount}`]);
    return 'Refunded.';
  },
});

function desk(steps: Step[]) {
  const { store, edit } = open();
  const agent = createAgent({
    name: 'desk',
    instructions: '',
    tools: [refund],
    model: scriptModel(steps),
    store,
  });
  const refunds = async () => ((await store.getState('desk', 'refunds')) as string[] | undefined) ?? [];
  return { agent, store, edit, refunds };
}

describe('rows edited on disk', () => {
  it('an edited effect preview is detected: shown as a mismatch, refused, audited, nothing runs', async () => {
    const { store, edit } = open();
    const agent = createAgent({
      name: 'kitchen',
      instructions: '',
      tools: [getShoppingList, addToShoppingList],
      model: scriptModel([[{ tool: 'add_to_shopping_list', args: { item: 'eggs', quantity: '12' } }]]),
      store,
      selfApproval: true,
    });
    const id = (await agent.chat('s1', 'eggs')).approvals[0]!.id;
    expect(edit(`UPDATE approvals SET effect = 'Add "1 egg" to the shopping list.'`)).toBe(1);
    expect((await showRequest(store, id)).integrity).toBe('mismatch');
    expect(await code(agent.decide(id, { approved: true, by: 'pat' }))).toBe('INTEGRITY_VIOLATION');
    expect((await store.listAudit()).map((entry) => entry.kind)).toContain('tamper.refused');
    expect((await store.getApproval(id))!.status).toBe('pending');
    expect(await store.getState('kitchen', 'shopping-list')).toBeUndefined();
  });

  it("an approver's pending edit changed on disk is refused before the next approval", async () => {
    const { agent, store, edit, refunds } = desk([[{ tool: 'refund', args: { orderId: 9, amount: 40 } }]]);
    const id = (await agent.chat('s1', 'refund', { by: 'cust' })).approvals[0]!.id;
    // Raised to 600 by an approver: two managers must approve the edited call.
    await agent.decide(id, { approved: true, by: 'meg', roles: ['manager'], edit: { amount: 600 } });
    expect((await store.getApproval(id))!).toMatchObject({ approvalsNeeded: 2, approvals: [{ by: 'meg' }] });
    // The stored edit is rewritten to 6000 (its hash left as it was).
    expect(
      edit(`UPDATE approvals SET pending_edit = replace(pending_edit, '"amount":600', '"amount":6000')`),
    ).toBe(1);
    expect(await code(agent.decide(id, { approved: true, by: 'max', roles: ['manager'] }))).toBe(
      'INTEGRITY_VIOLATION',
    );
    expect(await refunds()).toEqual([]);
  });

  it.each([
    ['required_role', `UPDATE approvals SET required_role = NULL`],
    ['approvals_needed', `UPDATE approvals SET approvals_needed = 1`],
    ['both', `UPDATE approvals SET required_role = NULL, approvals_needed = 1`],
  ])('an edited %s does not lower what the policy asks for', async (_name, sql) => {
    const { agent, store, edit, refunds } = desk([
      [{ tool: 'refund', args: { orderId: 9, amount: 800 } }],
      ['ok'],
    ]);
    const id = (await agent.chat('s1', 'refund', { by: 'cust' })).approvals[0]!.id;
    edit(sql);
    // Support cannot decide it; one manager does not complete it.
    expect(await code(agent.decide(id, { approved: true, by: 'sam', roles: ['support'] }))).toBe('FORBIDDEN');
    const first = await agent.decide(id, { approved: true, by: 'meg', roles: ['manager'] });
    expect(first.status).toBe('awaiting_approval');
    expect(await refunds()).toEqual([]);
    expect((await store.getApproval(id))!).toMatchObject({ requiredRole: 'manager', approvalsNeeded: 2 });
    await agent.decide(id, { approved: true, by: 'max', roles: ['manager'] });
    expect(await refunds()).toEqual(['9:800']);
  });

  it('an edited editable column does not let a person change another field', async () => {
    const { agent, store, edit, refunds } = desk([[{ tool: 'refund', args: { orderId: 9, amount: 40 } }]]);
    const id = (await agent.chat('s1', 'refund', { by: 'cust' })).approvals[0]!.id;
    edit(`UPDATE approvals SET editable = '["amount","orderId"]'`);
    expect(await code(agent.decide(id, { approved: true, by: 'sam', edit: { orderId: 1 } }))).toBe(
      'NOT_EDITABLE',
    );
    expect((await store.getApproval(id))!.status).toBe('pending');
    expect(await refunds()).toEqual([]);
  });

  it('an edit of a migrated store (rows written before edit and quorum) still works: rows read as one approver', async () => {
    const { agent, store, edit, refunds } = desk([
      [{ tool: 'refund', args: { orderId: 9, amount: 40 } }],
      ['ok'],
    ]);
    const id = (await agent.chat('s1', 'refund', { by: 'cust' })).approvals[0]!.id;
    edit(`UPDATE approvals SET effect_hash = NULL, editable = '[]'`);
    await agent.decide(id, { approved: true, by: 'sam', edit: { amount: 30 } });
    expect(await refunds()).toEqual(['9:30']);
    expect((await store.getApproval(id))!.decision?.edit?.args).toEqual({ orderId: 9, amount: 30 });
  });

  it('a call found started by a run that died, its row then edited, is refused and marked unknown, never failed', async () => {
    // The earlier run may have run it (with the arguments approved): only a person can say.
    const { store, edit } = open();
    const ran: unknown[] = [];
    const cancel = defineTool({
      name: 'cancel',
      description: 'Cancel an order.',
      input: z.object({ orderId: z.number().int() }),
      idempotent: true,
      execute: async (args) => {
        ran.push(args);
        return 'Cancelled.';
      },
    });
    const enqueued: string[] = [];
    const agent = createAgent({
      name: 'desk',
      instructions: '',
      tools: [cancel],
      model: scriptModel([[{ tool: 'cancel', args: { orderId: 7 } }], ['ok']]),
      store,
      // Deciding only enqueues the run, as with workers: the test steps between the two.
      continuations: {
        enqueue: async (job) => {
          enqueued.push(job.session);
        },
        work: async () => undefined,
        close: async () => undefined,
      },
    });
    const id = (await agent.chat('s1', 'cancel 7', { by: 'cust' })).approvals[0]!.id;
    await agent.decide(id, { approved: true, by: 'sam' });
    expect(enqueued).toEqual(['s1']);
    const request = (await store.getApproval(id))!;
    // A worker started the call and died; then the row's arguments were edited.
    await store.startExecution({
      requestId: id,
      session: 's1',
      callId: request.callId,
      tool: 'cancel',
      args: request.args,
      idempotencyKey: `countersign:${id}`,
      at: new Date().toISOString(),
    });
    expect(edit(`UPDATE approvals SET args_json = '{"orderId":8}'`)).toBe(1);
    const turn = await agent.resume('s1');
    expect(turn.status).toBe('awaiting_reconciliation');
    expect(ran).toEqual([]);
    expect(await store.getExecution(id)).toMatchObject({ status: 'unknown', result: null });
    expect((await store.listAudit()).map((entry) => entry.kind)).toContain('tamper.refused');
  });
});
