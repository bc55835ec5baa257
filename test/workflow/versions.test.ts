import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import type { CheckpointStore, StoredCheckpoint } from '../../src/store/checkpoint-store.ts';
import { createFileCheckpointStore } from '../../src/store/fs/file-checkpoint-store.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Workflow } from '../../src/workflow/define-workflow.ts';
import { createWorkflowRunner } from '../../src/workflow/runner.ts';
import { refundInCents, refundRenamedExecutor, refundV2 } from './refund-versions.ts';

const fixtures = join(import.meta.dirname, '../fixtures/refund-v1');
const v1Checkpoints = JSON.parse(
  readFileSync(join(fixtures, 'checkpoints.json'), 'utf8'),
) as StoredCheckpoint[];
const approve = { approved: true, note: 'Approved, photo checked.' };
const cleanups: Array<() => void> = [];

afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-versions-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The v1 fixtures loaded into a fresh store of each kind. */
const stores: Record<string, () => Promise<CheckpointStore>> = {
  memory: async () => load(createMemoryCheckpointStore()),
  sqlite: async () => load(createSqliteStore({ path: join(tempDir(), 'store.db') })),
  // The checked-in file-store directory itself, copied so the test cannot change it.
  file: async () => {
    const dir = join(tempDir(), 'checkpoints');
    cpSync(join(fixtures, 'file-store'), dir, { recursive: true });
    return createFileCheckpointStore({ dir });
  },
};

async function load(store: CheckpointStore): Promise<CheckpointStore> {
  let latest: Record<string, string> = {};
  for (const checkpoint of v1Checkpoints) {
    const result = await store.saveCheckpoint(checkpoint, latest[checkpoint.run] ?? null);
    if (!result.saved) throw new Error(`fixture ${checkpoint.id} did not load`);
    latest = { ...latest, [checkpoint.run]: checkpoint.id };
  }
  return store;
}

const waitingRequest = v1Checkpoints.find(
  (checkpoint) => checkpoint.run === 'refund-1040' && checkpoint.seq === 1,
)!;
const v1RequestId = (waitingRequest.body as { state: { requests: Array<{ id: string }> } }).state.requests[0]!
  .id;

describe.each(Object.keys(stores))('version-1 refund checkpoints (%s store)', (kind) => {
  const open = async (workflow: Workflow) => {
    const checkpoints = await stores[kind]!();
    cleanups.push(() => void checkpoints.close());
    return { checkpoints, runner: createWorkflowRunner({ workflows: [workflow], checkpoints }) };
  };

  it('are what version 1 wrote: a run waiting at manager-approval', () => {
    expect(waitingRequest).toMatchObject({ workflow: 'refund', version: 1, status: 'awaiting_input' });
  });

  it('resume with the current refund workflow, same request ids, and complete', async () => {
    const { runner } = await open(refundWorkflow);
    const resumed = await runner.resume('refund-1040');
    expect(resumed.requests.map((request) => request.id)).toEqual([v1RequestId]);
    expect((await runner.respond('refund-1040', v1RequestId, approve)).outputs).toEqual([
      'Refund issued: 35.00 for order 1040. Manager note: Approved, photo checked.',
    ]);
  });

  it('their requests were written before requests expired: no expiresAt, so they never expire', async () => {
    const fixtureRequest = (waitingRequest.body as { state: { requests: Array<Record<string, unknown>> } })
      .state.requests[0]!;
    expect(fixtureRequest).not.toHaveProperty('expiresAt');
    const checkpoints = await stores[kind]!();
    cleanups.push(() => void checkpoints.close());
    // Years after the fixtures were written (January 2026), and past any TTL.
    const runner = createWorkflowRunner({
      workflows: [refundWorkflow],
      checkpoints,
      now: () => new Date('2036-01-15T09:00:00.000Z'),
    });
    expect(await runner.expire()).toEqual([]);
    const resumed = await runner.resume('refund-1040');
    expect(resumed).toMatchObject({ status: 'awaiting_input' });
    expect(resumed.requests).toEqual([expect.objectContaining({ id: v1RequestId, expiresAt: null })]);
    // Adopted as a row that never expires, still pending.
    expect(await checkpoints.getApproval(v1RequestId)).toMatchObject({
      status: 'pending',
      expiresAt: '9999-12-31T23:59:59.999Z',
    });
    expect((await runner.respond('refund-1040', v1RequestId, approve)).status).toBe('completed');
  });

  it('resume with v2 (an added optional field): the waiting run is upgraded and completes', async () => {
    const { runner, checkpoints } = await open(refundV2());
    const resumed = await runner.resume('refund-1040');
    expect(resumed).toMatchObject({ version: 2, status: 'awaiting_input' });
    expect(resumed.requests.map((request) => request.id)).toEqual([v1RequestId]);
    expect((await checkpoints.latestCheckpoint('refund-1040'))?.parent).toBe(waitingRequest.id);
    const done = await runner.respond('refund-1040', v1RequestId, approve);
    expect(done).toMatchObject({ version: 2, status: 'completed' });
    // The v1 case has no currency, and v2 copes with its absence.
    expect(done.outputs).toEqual([
      'Refund issued: 35.00 for order 1040. Manager note: Approved, photo checked.',
    ]);
    // A run started under v2 carries the new field.
    const fresh = await runner.start('refund', 'refund-1044', 1044);
    expect(fresh.requests[0]?.data).toMatchObject({ orderId: 1044, currency: 'EUR' });
  });

  it('a removed executor is CHECKPOINT_INCOMPATIBLE naming it, and nothing is written', async () => {
    const { runner, checkpoints } = await open(refundRenamedExecutor());
    const attempt = runner.resume('refund-1040');
    await expect(attempt).rejects.toMatchObject({ code: 'CHECKPOINT_INCOMPATIBLE', node: 'execute' });
    await expect(attempt).rejects.toThrow(/executor "execute" no longer exists/);
    await expect(runner.respond('refund-1040', v1RequestId, approve)).rejects.toMatchObject({
      code: 'CHECKPOINT_INCOMPATIBLE',
    });
    expect((await checkpoints.latestCheckpoint('refund-1040'))?.id).toBe(waitingRequest.id);
    expect((await checkpoints.getApproval(v1RequestId))?.status ?? 'pending').toBe('pending');
  });

  it('a changed required field is CHECKPOINT_INCOMPATIBLE naming the port and the field', async () => {
    const { runner } = await open(refundInCents({ migrate: false }));
    const attempt = runner.resume('refund-1040');
    await expect(attempt).rejects.toMatchObject({
      code: 'CHECKPOINT_INCOMPATIBLE',
      node: 'manager-approval',
      field: 'amountCents',
    });
    await expect(attempt).rejects.toThrow(
      /refund v1.*refund v3.*port "manager-approval".*field "amountCents"/,
    );
  });

  it('a registered migration upgrades the waiting v1 run to v3, which then completes', async () => {
    const { runner, checkpoints } = await open(refundInCents({ migrate: true }));
    const resumed = await runner.resume('refund-1040');
    expect(resumed).toMatchObject({ version: 3, status: 'awaiting_input' });
    expect(resumed.requests).toEqual([
      expect.objectContaining({
        id: v1RequestId,
        data: { orderId: 1040, amountCents: 3500, reason: 'Damaged cover reported by customer' },
      }),
    ]);
    expect(await checkpoints.listRuns()).toEqual(
      expect.arrayContaining([expect.objectContaining({ run: 'refund-1040', version: 3 })]),
    );
    const done = await runner.respond('refund-1040', v1RequestId, approve);
    expect(done.outputs).toEqual([
      'Refund issued: 35.00 for order 1040. Manager note: Approved, photo checked.',
    ]);
    // The stored v1 checkpoint itself is untouched by the upgrade.
    expect(await checkpoints.getCheckpoint('refund-1040', waitingRequest.id)).toEqual(waitingRequest);
  });

  it('a checkpoint written by a newer version is refused', async () => {
    const { runner, checkpoints } = await open(refundWorkflow);
    const newer = { ...waitingRequest, id: 'cp_newer', seq: 2, parent: waitingRequest.id, version: 9 };
    expect((await checkpoints.saveCheckpoint(newer, waitingRequest.id)).saved).toBe(true);
    const attempt = runner.resume('refund-1040');
    await expect(attempt).rejects.toMatchObject({ code: 'CHECKPOINT_INCOMPATIBLE' });
    await expect(attempt).rejects.toThrow(/written by refund v9.*newer version/);
  });
});
