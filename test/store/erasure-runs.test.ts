import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { supportWorkflow } from '../../examples/bookstore/app.ts';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { keyringOf } from '../../src/crypto/encrypted-store.ts';
import { ERASURE_INTENTS, erasePrincipal } from '../../src/erasure/erase-principal.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import type { CheckpointStore } from '../../src/store/checkpoint-store.ts';
import { openCheckpointStore } from '../../src/store/open-checkpoint-store.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { DataKeys } from '../../src/store/ports/data-keys.ts';
import type { Store } from '../../src/store/store.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl } from '../helpers/postgres.ts';
import { type TestServer, testServer } from '../server/helpers.ts';

/**
 * Which workflow runs' keys an erasure destroys, and through which keyring (encryption at
 * rest on): every run it removes, however the customer was linked to it, each through the
 * keyring that sealed it; and a record of them (ERASURE_INTENTS) that an edit cannot make
 * stand in for a run it lacks. Memory (its runs in a separate store), SQLite and PostgreSQL.
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

/**
 * Runs in a separate encrypted checkpoint store (a `file:` store with its own keyring and
 * data keys, in its own directory), erased over the API as a server with such a store does.
 * The run's checkpoints are sealed with the run's key in THAT store's keyring, and its port
 * request with the customer's key there: both must go from there.
 */
async function runInASeparateCheckpointStore(store: Store, { sealsTrail }: { sealsTrail: boolean }) {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-erase-runs-file-'));
  const checkpoints = await openCheckpointStore(`file:${dir}`, { env });
  const server = serve(store, checkpoints);
  await startRun(server, { workflow: 'refund', run: 'refund-1', input: 1040, user: CUSTOMER });
  await nobodysRun(server, 'refund-nobody');
  expect(await liveKey(checkpoints, 'run:refund-1')).toBe(true);
  expect(await liveKey(checkpoints, `principal:${CUSTOMER}`)).toBe(true);
  // The file store keeps no trail: the runner wrote the run's entries to the main one.
  const entries = async () => (await store.listAudit()).filter((entry) => entry.session === 'wf.refund-1');
  expect((await entries()).length).toBeGreaterThan(0);

  const erased = await server.call('POST', `/v1/customers/${CUSTOMER}/erase`, { as: 'admin' });
  expect(erased.status).toBe(200);
  expect(await checkpoints.latestCheckpoint('refund-1')).toBeNull();
  expect(await liveKey(checkpoints, 'run:refund-1')).toBe(false);
  expect(await liveKey(checkpoints, `principal:${CUSTOMER}`)).toBe(false);
  expect(erased.json).toMatchObject({ erased: true, keyForgotten: true, counts: { runs: 1 } });
  // Its entries in the main trail are sealed there with the run's key (the memory store
  // seals nothing): that key is gone too, so they read as erased; the chain verifies.
  expect(await liveKey(store, 'run:refund-1')).toBe(false);
  if (sealsTrail)
    for (const entry of await entries()) expect(entry).toMatchObject({ data: {}, erasedAt: 'key-destroyed' });
  expect((await server.call('GET', '/v1/audit/verify', { as: 'alice' })).json.ok).toBe(true);
  expect(await liveKey(checkpoints, 'run:refund-nobody')).toBe(true);
  expect((await checkpoints.latestCheckpoint('refund-nobody'))?.status).toBe('awaiting_input');
  expect(await store.getState(ERASURE_INTENTS, CUSTOMER)).toBeNull();
  // Erasing again finds nothing left, keys included.
  const again = await server.call('POST', `/v1/customers/${CUSTOMER}/erase`, { as: 'admin' });
  expect(again.json).toMatchObject({ erased: false, keyForgotten: false });
}

class Injected extends Error {}

/**
 * An intent record edited (or written by hand) to hold one run twice: as many entries as
 * the runs found now, but not the same runs. The erasure must still record the run it
 * found before removing its rows, or a crash after the removal loses it for good.
 */
async function intentWithADuplicate(store: Store) {
  const server = serve(store, store as unknown as CheckpointStore);
  await startRun(server, { workflow: 'refund', run: 'refund-1', input: 1040, user: CUSTOMER });
  await store.setState(ERASURE_INTENTS, CUSTOMER, {
    runs: ['refund-gone', 'refund-gone'],
    since: '2026-01-01T00:00:00.000Z',
  });
  const keyring = keyringOf(store);
  if (keyring === null) throw new Error('no keyring');
  // Stopped once the rows are gone, before any key is destroyed.
  const stopped = await erasePrincipal(store, CUSTOMER, {
    by: 'dpo',
    keys: {
      forget: async () => {
        throw new Injected('the process died before the keys went');
      },
      forgetRun: (run) => keyring.forgetRun(run),
      holds: (principal) => keyring.holds(principal),
    },
  }).catch((error: unknown) => (error instanceof Injected ? null : Promise.reject(error)));
  expect(stopped).toBeNull();
  expect(await (store as unknown as CheckpointStore).latestCheckpoint('refund-1')).toBeNull();
  expect(await store.getState(ERASURE_INTENTS, CUSTOMER)).toMatchObject({
    runs: ['refund-1', 'refund-gone'],
  });
  // The rerun finds no row naming the run any more: only the record leads to its key.
  const again = await erasePrincipal(store, CUSTOMER, { by: 'dpo' });
  expect(again.keyForgotten).toBe(true);
  expect(await liveKey(store, 'run:refund-1')).toBe(false);
  expect(await store.getState(ERASURE_INTENTS, CUSTOMER)).toBeNull();
}

/**
 * A customer with no runs, beside a run started for nobody: the erasure records nothing
 * (the record is never written, so a rerun has nothing to read back) and leaves that run's
 * key alone.
 */
async function customerWithNoRuns(store: Store) {
  const server = serve(store, store as unknown as CheckpointStore);
  await nobodysRun(server, 'refund-nobody');
  const turn = await server.call('POST', '/v1/sessions/s1/messages', {
    as: 'svc',
    body: { text: 'Hello, where is my order?', user: CUSTOMER, agent: 'bookstore' },
  });
  expect(turn.status).toBe(200);
  const report = await erasePrincipal(store, CUSTOMER, { by: 'dpo' });
  expect(report).toMatchObject({ erased: true, counts: { sessions: 1, runs: 0 } });
  expect(await store.getState(ERASURE_INTENTS, CUSTOMER)).toBeUndefined();
  expect(await liveKey(store, 'run:refund-nobody')).toBe(true);
  expect((await (store as unknown as CheckpointStore).latestCheckpoint('refund-nobody'))?.status).toBe(
    'awaiting_input',
  );
}

describe('erasure destroys the key of every run it removes, through the keyring that sealed it', () => {
  it('a customer with no runs: nothing recorded, no run key touched (SQLite)', async () => {
    await customerWithNoRuns(await sqlite());
  });

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

  describe('a separate encrypted checkpoint store: its own keyring destroys its keys', () => {
    it('memory', async () => {
      await runInASeparateCheckpointStore(await openStore('memory:', { env }), { sealsTrail: false });
    });

    it('SQLite', async () => {
      await runInASeparateCheckpointStore(await sqlite(), { sealsTrail: true });
    });

    describe.skipIf(pg === null)('PostgreSQL', () => {
      const schema = freshSchema('erase_runs_separate');
      afterAll(async () => {
        await dropSchema(schema);
      });
      it('the run key and the customer key go from the file store', async () => {
        await runInASeparateCheckpointStore(await postgres(schema), { sealsTrail: true });
      });
    });
  });

  describe('an intent record holding a run twice still takes in a newly found run', () => {
    it('SQLite', async () => {
      await intentWithADuplicate(await sqlite());
    });

    describe.skipIf(pg === null)('PostgreSQL', () => {
      const schema = freshSchema('erase_runs_intent');
      afterAll(async () => {
        await dropSchema(schema);
      });
      it('the run found after the edit is recorded, and its key goes on the rerun', async () => {
        await intentWithADuplicate(await postgres(schema));
      });
    });
  });
});
