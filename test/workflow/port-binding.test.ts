import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { verifyAuditChain } from '../../src/core/audit.ts';
import { createSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { createWorkflowRunner } from '../../src/workflow/runner.ts';

const approve = { approved: true, note: 'Approved, photo checked.' };
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A refund run waiting at manager-approval on SQLite, started by `desk` for customer c-100. */
async function waitingRefund() {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-port-binding-'));
  const path = join(dir, 'store.db');
  const store: SqliteStore = createSqliteStore({ path });
  cleanups.push(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const runner = createWorkflowRunner({ workflows: [refundWorkflow], checkpoints: store });
  const view = await runner.start('refund', 'refund-1040', 1040, { by: 'desk', customer: 'c-100' });
  const request = view.requests[0]!;
  /** What a person with sqlite3 would do to the file. */
  const edit = (sql: string) => {
    const db = new DatabaseSync(path);
    try {
      return db.prepare(sql).run().changes;
    } finally {
      db.close();
    }
  };
  return { store, runner, request, edit };
}

const refunded = (store: SqliteStore) => store.getState('bookstore', 'refund:1040');

describe('a port request is bound to what was raised', () => {
  it('the row says what answering does and for which customer, and holds the parties', async () => {
    const { store, request } = await waitingRefund();
    expect(await store.getApproval(request.id)).toMatchObject({
      kind: 'port',
      run: 'refund-1040',
      session: 'wf.refund-1040',
      tool: 'manager-approval',
      args: { orderId: 1040, amount: 35 },
      effect: 'Approving refunds 35.00 on order 1040 to customer c-100; declining refunds nothing.',
      raisedBy: 'desk',
      customer: 'c-100',
      requiredRole: 'manager',
      status: 'pending',
    });
  });

  it('the issue’s repro: amount 35 edited to 3500 in the stored checkpoint is INTEGRITY_VIOLATION, audited, nothing refunded', async () => {
    const { store, runner, request, edit } = await waitingRefund();
    expect(
      edit(
        `UPDATE workflow_checkpoints SET body = replace(body, '"amount":35,', '"amount":3500,')
         WHERE id = (SELECT latest FROM workflow_runs WHERE id = 'refund-1040')`,
      ),
    ).toBe(1);
    await expect(runner.respond('refund-1040', request.id, approve, { by: 'mona' })).rejects.toMatchObject({
      code: 'INTEGRITY_VIOLATION',
      message: expect.stringContaining(
        "the run's checkpoint no longer holds the request data that was raised",
      ),
    });
    await expect(runner.answer(request.id, approve, { by: 'mona' })).rejects.toMatchObject({
      code: 'INTEGRITY_VIOLATION',
    });
    expect(await refunded(store)).toBeUndefined();
    expect((await store.getApproval(request.id))?.status).toBe('pending');
    const audit = await store.listAudit({ session: 'wf.refund-1040' });
    expect(audit.map((entry) => entry.kind)).toEqual(['request.raised', 'tamper.refused', 'tamper.refused']);
    expect(audit[1]).toMatchObject({
      requestId: request.id,
      actor: 'mona',
      data: { kind: 'port', port: 'manager-approval' },
    });
    expect(audit.some((entry) => entry.kind === 'request.decided')).toBe(false);
    expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
  });

  it('an answer recorded before the checkpoint was edited is not applied: resume is INTEGRITY_VIOLATION, nothing refunded', async () => {
    const { store, request, edit } = await waitingRefund();
    // Answered by a process that died before continuing the run.
    await store.decide(request.id, {
      verdict: 'answered',
      response: approve,
      by: 'mona',
      reason: null,
      at: new Date().toISOString(),
      kind: 'person',
    });
    edit(`UPDATE workflow_checkpoints SET body = replace(body, '"amount":35,', '"amount":3500,')`);
    const runner = createWorkflowRunner({ workflows: [refundWorkflow], checkpoints: store });
    await expect(runner.resume('refund-1040')).rejects.toMatchObject({ code: 'INTEGRITY_VIOLATION' });
    expect(await refunded(store)).toBeUndefined();
    expect((await store.listAudit()).map((entry) => entry.kind)).toContain('tamper.refused');
  });

  it('an edited payload in the row itself is INTEGRITY_VIOLATION too', async () => {
    const { store, runner, request, edit } = await waitingRefund();
    expect(edit(`UPDATE approvals SET args_json = replace(args_json, '"amount":35', '"amount":3500')`)).toBe(
      1,
    );
    await expect(runner.respond('refund-1040', request.id, approve, { by: 'mona' })).rejects.toMatchObject({
      code: 'INTEGRITY_VIOLATION',
    });
    expect(await refunded(store)).toBeUndefined();
    expect((await store.getApproval(request.id))?.status).toBe('pending');
  });

  it('edited parties on the row do not let the raiser or the customer answer', async () => {
    const { store, runner, request, edit } = await waitingRefund();
    edit(`UPDATE approvals SET raised_by = NULL, customer = NULL`);
    for (const by of ['desk', 'c-100', 'mona']) {
      await expect(runner.respond('refund-1040', request.id, approve, { by })).rejects.toMatchObject({
        code: 'INTEGRITY_VIOLATION',
        message: expect.stringContaining("parties differ from the run's"),
      });
    }
    expect(await refunded(store)).toBeUndefined();
  });

  it('a required role dropped from the row still applies: the port says manager', async () => {
    const { store, runner, request, edit } = await waitingRefund();
    edit(`UPDATE approvals SET required_role = NULL`);
    await expect(
      runner.respond('refund-1040', request.id, approve, { by: 'mona', roles: ['approver'] }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('manager role') });
    expect((await store.getApproval(request.id))?.status).toBe('pending');
    expect(
      (await runner.respond('refund-1040', request.id, approve, { by: 'mona', roles: ['manager'] })).status,
    ).toBe('completed');
  });

  it('separation of duties from the row: the starter and the customer may not answer; a manager may, once', async () => {
    const { store, runner, request } = await waitingRefund();
    await expect(runner.answer(request.id, approve, { by: 'desk' })).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    await expect(runner.answer(request.id, approve, { by: 'C-100' })).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    const done = await runner.answer(request.id, approve, { by: 'mona', roles: ['manager'] });
    expect(done).toMatchObject({
      status: 'completed',
      outputs: [expect.stringMatching(/^Refund issued: 35\.00/)],
    });
    expect(await store.getApproval(request.id)).toMatchObject({
      status: 'answered',
      decision: { verdict: 'answered', by: 'mona', kind: 'person', response: approve },
    });
    await expect(runner.answer(request.id, approve, { by: 'max', roles: ['manager'] })).rejects.toMatchObject(
      {
        code: 'ALREADY_DECIDED',
        message: expect.stringContaining('mona'),
      },
    );
  });
});
