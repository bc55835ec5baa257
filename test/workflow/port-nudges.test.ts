import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fireDueNudges } from '../../src/requests/fire-nudges.ts';
import { createSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { defineWorkflow } from '../../src/workflow/define-workflow.ts';
import { executor } from '../../src/workflow/executor.ts';
import { requestPort } from '../../src/workflow/request-port.ts';
import { createWorkflowRunner } from '../../src/workflow/runner.ts';

/**
 * A workflow port's requests are reminded and escalated like a tool call's (one request
 * model): the same row, due-query, compare-and-set and rule; escalation lets the role it
 * names answer too.
 */
const MINUTE = 60_000;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function sqliteStore(): SqliteStore {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-port-nudges-'));
  const store = createSqliteStore({ path: join(dir, 'store.db') });
  cleanups.push(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

const signOff = requestPort('sign-off', {
  request: z.object({ amount: z.number() }),
  response: z.object({ ok: z.boolean() }),
  role: 'manager',
  ttl: '1h',
  remindAfter: '10m',
  escalateAfter: '20m',
  escalateTo: 'director',
  warnBefore: '15m',
});
const asker = executor({
  id: 'asker',
  input: z.number(),
  output: z.string(),
  ports: [signOff],
  handle: (amount, ctx) => {
    ctx.request(signOff, { amount });
    return undefined;
  },
  onResponse: (answer) => `ok ${(answer.response as { ok: boolean }).ok}`,
});
const payout = defineWorkflow({ name: 'payout', version: 1 }).start(asker).output(asker).build();

describe('nudges of workflow port requests', () => {
  it('remind, escalate and warn once each; after the escalation a director may answer', async () => {
    const store = sqliteStore();
    const clock = { ms: Date.parse('2026-03-02T09:00:00.000Z') };
    const now = () => new Date(clock.ms);
    const runner = createWorkflowRunner({ workflows: [payout], checkpoints: store, now });
    const view = await runner.start('payout', 'p-1', 500);
    const id = view.requests[0]!.id;
    expect((await store.getApproval(id))?.nudges).toMatchObject({
      remindAt: '2026-03-02T09:10:00.000Z',
      escalateAt: '2026-03-02T09:20:00.000Z',
      escalateTo: 'director',
      expiringAt: '2026-03-02T09:45:00.000Z',
    });
    const director = { by: 'dana', roles: ['director'] };
    await expect(runner.answer(id, { ok: true }, director)).rejects.toMatchObject({ code: 'FORBIDDEN' });

    clock.ms += 11 * MINUTE;
    expect((await fireDueNudges({ store, now: now() })).map((event) => event.type)).toEqual([
      'request.reminder',
    ]);
    expect(await fireDueNudges({ store, now: now() })).toEqual([]);
    clock.ms += 35 * MINUTE;
    const fired = await fireDueNudges({ store, now: now() });
    expect(fired).toMatchObject([
      { type: 'request.escalated', kind: 'port', tool: 'sign-off', escalatedTo: 'director' },
      { type: 'request.expiring', kind: 'port' },
    ]);
    const kinds = (await store.listAudit()).map((entry) => entry.kind);
    expect(kinds).toEqual(['request.raised', 'request.reminder', 'request.escalated', 'request.expiring']);

    // A role nobody escalated to still may not; the director may now.
    await expect(runner.answer(id, { ok: true }, { by: 'sam', roles: ['support'] })).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    const answered = await runner.answer(id, { ok: true }, director);
    expect(answered.outputs).toEqual(['ok true']);
  });
});
