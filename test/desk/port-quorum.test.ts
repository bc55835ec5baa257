import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  executeRefund,
  managerDecision,
  prepare,
  refundCase,
} from '../../examples/bookstore/refund-workflow.ts';
import { defineWorkflow, executor, requestPort } from '../../src/authoring.ts';
import { CountersignError } from '../../src/core/errors/countersign-error.ts';
import { createSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { createWorkflowRunner } from '../../src/workflow/runner.ts';

/**
 * A workflow port that needs two managers (`approvals: 2`): the one request model, so the
 * quorum works for port requests as for tool calls — distinct approvers, a veto, one answer
 * recorded after the last. On a real SQLite store (the port rows live beside the tool calls).
 */
const twoManagers = requestPort('two-managers', {
  request: refundCase,
  response: managerDecision,
  role: 'manager',
  approvals: 2,
});
const execute = executor({
  id: 'execute',
  input: managerDecision,
  output: z.string(),
  handle: (decision, ctx) => executeRefund(ctx, twoManagers.requestOf(ctx), decision),
});
const bigRefund = defineWorkflow({ name: 'big-refund', version: 1, stateNamespace: 'bookstore' })
  .start(prepare)
  .edge(prepare, twoManagers)
  .edge(twoManagers, execute)
  .output(execute)
  .build();

let dir: string | null = null;
let store: SqliteStore | null = null;
afterEach(async () => {
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  store = dir = null;
});

async function waiting() {
  dir = mkdtempSync(join(tmpdir(), 'countersign-port-quorum-'));
  store = createSqliteStore({ path: join(dir, 'store.db') });
  const runner = createWorkflowRunner({ workflows: [bigRefund], checkpoints: store });
  const view = await runner.start('big-refund', 'r1', 1040, { by: 'backend', customer: 'c-100' });
  return { runner, store, id: view.requests[0]!.id };
}

const yes = { approved: true, note: 'ok' };
const code = async (promise: Promise<unknown>) =>
  promise.then(
    () => 'no error',
    (error: unknown) => (CountersignError.is(error) ? error.code : String(error)),
  );

describe('a port that needs two approvers', () => {
  it('records the first approval, refuses the same person twice, answers after the second', async () => {
    const { runner, store, id } = await waiting();
    expect((await store.getApproval(id))!).toMatchObject({ approvalsNeeded: 2, requiredRole: 'manager' });
    const first = await runner.answer(id, yes, { by: 'meg', roles: ['manager'] });
    expect(first.status).toBe('awaiting_input');
    expect((await store.getApproval(id))!).toMatchObject({ status: 'pending', approvals: [{ by: 'meg' }] });
    expect(await code(runner.answer(id, yes, { by: 'Meg', roles: ['manager'] }))).toBe('FORBIDDEN');
    expect(await code(runner.answer(id, yes, { by: 'c-100', roles: ['manager'] }))).toBe('FORBIDDEN');
    const done = await runner.answer(id, yes, { by: 'max', roles: ['manager'] });
    expect(done.status).toBe('completed');
    expect(done.outputs[0]).toContain('Refund issued: 35.00 for order 1040');
    const decided = (await store.getApproval(id))!;
    expect(decided.decision?.approvals?.map((a) => a.by)).toEqual(['meg', 'max']);
    const kinds = (await store.listAudit()).filter((e) => e.requestId === id).map((e) => e.kind);
    expect(kinds).toEqual(['request.raised', 'request.approval-added', 'request.decided']);
  });

  it('any rejection vetoes at once', async () => {
    const { runner, store, id } = await waiting();
    await runner.answer(id, yes, { by: 'meg', roles: ['manager'] });
    const done = await runner.answer(
      id,
      { approved: false, note: 'Too much.' },
      { by: 'max', roles: ['manager'] },
    );
    expect(done.outputs[0]).toContain('Refund declined');
    expect(await store.getState('bookstore', 'refund:1040')).toBeUndefined();
  });
});
