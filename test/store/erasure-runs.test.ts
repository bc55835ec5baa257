import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { supportWorkflow } from '../../examples/bookstore/app.ts';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { ERASURE_INTENTS, erasePrincipal } from '../../src/erasure/erase-principal.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import type { CheckpointStore } from '../../src/store/checkpoint-store.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { DataKeys } from '../../src/store/ports/data-keys.ts';
import type { Store } from '../../src/store/store.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl } from '../helpers/postgres.ts';
import { type TestServer, testServer } from '../server/helpers.ts';

/**
 * Which workflow runs' keys an erasure destroys (encryption at rest on): every run it
 * removes, however the customer was linked to it. SQLite and PostgreSQL (a memory store keeps
 * no runs, and a memory checkpoint store seals nothing).
 */
const pg = await postgresForTests();
const env = { COUNTERSIGN_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}` };
const CUSTOMER = 'c-100';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const keysOf = (book: object) => book as unknown as DataKeys;
const liveKey = async (book: object, owner: string) => (await keysOf(book).liveDataKey(owner)) !== null;

/** A server over `store` whose workflows keep their runs in `checkpoints`. */
function serve(store: Store, checkpoints: CheckpointStore): TestServer {
  const server = testServer({
    store,
    checkpoints,
    model: createDemoModel(),
    workflows: [refundWorkflow, supportWorkflow],
  });
  cleanups.push(async () => {
    await server.close();
    if (checkpoints !== (store as unknown)) await checkpoints.close();
    await store.close();
  });
  return server;
}

async function startRun(server: TestServer, body: Record<string, unknown>) {
  const started = await server.call('POST', '/v1/runs', { as: 'svc', body });
  expect(started.status, JSON.stringify(started.json)).toBe(200);
  expect(started.json.status).toBe('awaiting_input');
  return started.json as { run: string; requests: Array<{ id: string }> };
}

/** A refund run started for nobody (no `user`): erasing a customer must leave it be. */
async function nobodysRun(server: TestServer, run: string) {
  await startRun(server, { workflow: 'refund', run, input: 1043 });
}

async function sqlite(): Promise<Store> {
  return openStore(`sqlite:${join(mkdtempSync(join(tmpdir(), 'countersign-erase-runs-')), 'store.db')}`, {
    env,
  });
}

async function postgres(schema: string): Promise<Store> {
  return openStore(storeUrl(schema), { env });
}

/**
 * The support workflow started by the backend with no `user`: the run is nobody's by its
 * index of runs by customer, but its agent acts for the customer the input names, so its
 * tool call names them and carries the run. Once that call is decided, nothing pending and
 * nothing indexed leads from the customer to the run; only the decided request does, and the
 * store's erasure removes the run through it.
 */
async function runFoundOnlyThroughADecidedRequest(store: Store) {
  const server = serve(store, store as unknown as CheckpointStore);
  const started = await startRun(server, {
    workflow: 'support',
    run: 'support-1',
    input: { customer: CUSTOMER, message: 'Please cancel my order 1044.' },
  });
  const call = started.requests[0]!.id;
  const decided = await server.call('POST', `/v1/requests/${call}/decision`, {
    as: 'mia',
    body: { approved: true },
  });
  expect(decided.status).toBe(200);
  const row = await store.getApproval(call);
  expect(row).toMatchObject({ customer: CUSTOMER, run: 'support-1', status: 'approved' });
  expect(await store.listPendingOf(CUSTOMER)).toEqual([]);
  await nobodysRun(server, 'refund-nobody');
  expect(await liveKey(store, 'run:support-1')).toBe(true);

  const report = await erasePrincipal(store, CUSTOMER, { by: 'dpo' });
  expect(report.counts.runs).toBe(1);
  expect(report.keyForgotten).toBe(true);
  const book = store as unknown as CheckpointStore;
  expect(await book.latestCheckpoint('support-1')).toBeNull();
  // Its rows are gone, and so is the key every copy they left behind is sealed with.
  expect(await liveKey(store, 'run:support-1')).toBe(false);
  expect(await liveKey(store, `principal:${CUSTOMER}`)).toBe(false);
  // The run nobody started for them is untouched, its key and all.
  expect(await liveKey(store, 'run:refund-nobody')).toBe(true);
  expect((await book.latestCheckpoint('refund-nobody'))?.status).toBe('awaiting_input');
  expect(await store.getState(ERASURE_INTENTS, CUSTOMER)).toBeNull();
}

describe('erasure destroys the key of every run it removes', () => {
  describe('a run found only through a request already decided', () => {
    it('SQLite', async () => {
      await runFoundOnlyThroughADecidedRequest(await sqlite());
    });

    describe.skipIf(pg === null)('PostgreSQL', () => {
      const schema = freshSchema('erase_runs_decided');
      afterAll(async () => {
        await dropSchema(schema);
      });
      it('its key goes with its rows', async () => {
        await runFoundOnlyThroughADecidedRequest(await postgres(schema));
      });
    });
  });
});
