import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { supportWorkflow } from '../../examples/bookstore/app.ts';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { keyringOf } from '../../src/crypto/encrypted-store.ts';
import { type DataKeyForgetter, erasePrincipal } from '../../src/erasure/erase-principal.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import type { CheckpointStore } from '../../src/store/checkpoint-store.ts';
import { openCheckpointStore } from '../../src/store/open-checkpoint-store.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { DataKeys } from '../../src/store/ports/data-keys.ts';
import type { RequestBook } from '../../src/store/ports/request-book.ts';
import type { Store } from '../../src/store/store.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl } from '../helpers/postgres.ts';
import { type TestServer, testServer } from '../server/helpers.ts';

/**
 * An erasure stopped between any two of its steps (a process killed, a dropped connection:
 * here the N-th call to the store or to the key forgetter throws, before it runs or after it
 * ran with its answer lost), for every N until the erasure gets through. At each point:
 * no data key of the customer is destroyed while rows sealed with it remain, so every reader
 * (the API, checked against its OpenAPI document, and export) answers normally; running the
 * same erasure again completes it and reports what that run removed and destroyed; afterwards
 * nothing of the customer is left, and a run started for nobody is untouched. Memory, SQLite
 * and PostgreSQL, all with encryption keys set; runs in the store itself, including one only
 * a decided request of the customer leads to, or in a separate encrypted file: store.
 */
const pg = await postgresForTests();
const env = { COUNTERSIGN_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}` };
const SECRET = '12 Elm Street';
const INTENTS = 'countersign.erasure';

type Mode = 'before' | 'after';

class Injected extends Error {}

/** Counts every call the erasure makes; the N-th throws, before it runs or after. */
class Crash {
  calls = 0;
  readonly at: number;
  readonly mode: Mode;
  constructor(at: number, mode: Mode) {
    this.at = at;
    this.mode = mode;
  }

  async step<T>(run: () => Promise<T> | T): Promise<T> {
    this.calls += 1;
    const now = this.calls === this.at;
    if (now && this.mode === 'before') throw new Injected(`injected failure before call ${this.at}`);
    const result = await run();
    if (now) throw new Injected(`injected failure after call ${this.at} (its answer lost)`);
    return result;
  }
}

function failing<S extends object>(store: S, crash: Crash): S {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => crash.step(() => value.apply(target, args));
    },
  });
}

function forgetter(store: object, crash?: Crash): DataKeyForgetter {
  const keyring = keyringOf(store);
  if (keyring === null) throw new Error('no keyring');
  const step = <T>(run: () => Promise<T>) => (crash ? crash.step(run) : run());
  return {
    forget: (principal) => step(() => keyring.forget(principal)),
    forgetRun: (run) => step(() => keyring.forgetRun(run)),
    holds: (principal) => step(() => keyring.holds(principal)),
  };
}

/**
 * What an erasure works on: the store, and where workflow runs live (null: none are started),
 * `separate` when that is not the store itself (an encrypted file: store, its own keyring).
 */
interface World {
  server: TestServer;
  store: Store;
  runs: CheckpointStore | null;
  separate: CheckpointStore | null;
  /** A run started for nobody (with runs): no erasure of a customer may touch it, its key or all. */
  nobodys: string | null;
}

interface Seeded {
  label: string;
  customer: string;
  other: string;
  sessions: string[];
  /**
   * The customer's runs: one started for them, and (runs kept in the store itself) one that
   * only a request of theirs, decided before the erasure, leads to.
   */
  runs: string[];
}

async function chat(server: TestServer, session: string, user: string, text: string): Promise<string[]> {
  const turn = await server.call('POST', `/v1/sessions/${session}/messages`, {
    as: 'svc',
    body: { text, user, agent: 'bookstore' },
  });
  expect(turn.status).toBe(200);
  return (turn.json.approvals as Array<{ id: string }>).map((approval) => approval.id);
}

async function startRun(server: TestServer, body: Record<string, unknown>): Promise<string[]> {
  const started = await server.call('POST', '/v1/runs', { as: 'svc', body });
  expect(started.status, JSON.stringify(started.json)).toBe(200);
  expect(started.json.status).toBe('awaiting_input');
  return (started.json.requests as Array<{ id: string }>).map((request) => request.id);
}

/**
 * One customer with a waiting request, a decided and executed one, app state and, with
 * runs, a waiting run started for them and one started for nobody; with runs kept in the
 * store itself, also a run started for nobody whose agent acted for them (its call decided).
 */
async function seed(world: World, label: string): Promise<Seeded> {
  const { server, store } = world;
  // The bookstore's orders are c-100's. Each round erases c-100 completely, so the next one
  // starts from a customer with nothing stored and a new data key, on the same store.
  const customer = 'c-100';
  const other = 'c-200';
  const sessions = [`${label}-s1`, `${label}-s2`];
  const [decided] = await chat(
    server,
    sessions[1]!,
    customer,
    `Please cancel my order 1044. Deliver to ${SECRET}.`,
  );
  const approved = await server.call('POST', `/v1/requests/${decided}/decision`, {
    as: 'mia',
    body: { approved: true },
  });
  expect(approved.status, JSON.stringify(approved.json)).toBe(200);
  expect(
    await chat(server, sessions[0]!, customer, `Please cancel my order 1044. Deliver to ${SECRET}.`),
  ).toHaveLength(1);
  await chat(server, `${label}-other`, other, 'Hello from Juniper Lane.');
  const runs: string[] = [];
  if (world.runs !== null) {
    runs.push(`refund-${label}`);
    await startRun(server, { workflow: 'refund', run: runs[0], input: 1040, user: customer });
  }
  if (world.runs !== null && world.separate === null) {
    // Nobody's by the index of runs by customer: only the call, decided now, names them.
    const support = `support-${label}`;
    runs.push(support);
    const [call] = await startRun(server, {
      workflow: 'support',
      run: support,
      input: { customer, message: 'Please cancel my order 1044.' },
    });
    const answered = await server.call('POST', `/v1/requests/${call}/decision`, {
      as: 'mia',
      body: { approved: true },
    });
    expect(answered.status, JSON.stringify(answered.json)).toBe(200);
  }
  await store.setState('bookstore', `note:${customer}`, { address: SECRET });
  // The memory store seals nothing, so nothing made its key yet: make one, to see it destroyed.
  await keyringOf(store)?.ready({ scope: `principal:${customer}` });
  return { label, customer, other, sessions, runs };
}

const keys = (store: object) => store as unknown as DataKeys;
const live = async (store: object, owner: string) => (await keys(store).liveDataKey(owner)) !== null;

interface Left {
  sessions: number;
  /** The customer's requests in the store, and in a separate checkpoint store. */
  requests: number;
  separateRequests: number;
  checkpoints: number;
  /** The customer's key in the store's keyring, and in a separate checkpoint store's. */
  key: boolean;
  separateKey: boolean;
  /** Live keys of their runs, in every keyring that holds one. */
  runKeys: number;
  /** Runs whose checkpoints are still there while the key they are sealed with is gone. */
  unreadable: string[];
  state: boolean;
}

/** What a finished erasure leaves of the customer: nothing. */
const NOTHING_LEFT: Left = {
  sessions: 0,
  requests: 0,
  separateRequests: 0,
  checkpoints: 0,
  key: false,
  separateKey: false,
  runKeys: 0,
  unreadable: [],
  state: false,
};

async function left(world: World, seeded: Seeded): Promise<Left> {
  const { store, runs: book, separate } = world;
  const { customer } = seeded;
  const theirs = async (requests: RequestBook | null) =>
    requests === null
      ? 0
      : (await requests.listApprovals()).filter((row) => row.customer === customer).length;
  let checkpoints = 0;
  let runKeys = 0;
  const unreadable: string[] = [];
  for (const run of seeded.runs) {
    if (book === null) break;
    const there = (await book.latestCheckpoint(run)) !== null;
    const sealing = await live(book, `run:${run}`);
    if (there) checkpoints += 1;
    if (there && !sealing) unreadable.push(run);
    if (sealing) runKeys += 1;
    // The run's entries in the store's own trail are sealed with its key there.
    if (separate !== null && (await live(store, `run:${run}`))) runKeys += 1;
  }
  const state = await store.getState('bookstore', `note:${customer}`);
  return {
    sessions: (await store.listSessions()).filter((session) => session.principal === customer).length,
    requests: await theirs(store),
    separateRequests: await theirs(separate),
    checkpoints,
    key: await live(store, `principal:${customer}`),
    separateKey: separate !== null && (await live(separate, `principal:${customer}`)),
    runKeys,
    unreadable,
    state: state !== undefined && state !== null,
  };
}

/** The run started for nobody is still there, readable, with its key. */
async function nobodysRunStands(world: World): Promise<void> {
  if (world.runs === null || world.nobodys === null) return;
  expect((await world.runs.latestCheckpoint(world.nobodys))?.status).toBe('awaiting_input');
  expect(await live(world.runs, `run:${world.nobodys}`)).toBe(true);
}

/** Every reader of what is left answers, in the shape the API promises, with nothing undecodable. */
async function readersAnswer(world: World, seeded: Seeded): Promise<void> {
  const { server, store } = world;
  const bodies: unknown[] = [];
  const get = async (path: string) => {
    // server.call checks each answer against the OpenAPI document: an erased marker fails it.
    const response = await server.call('GET', path, { as: 'alice' });
    expect(response.status, path).toBe(200);
    bodies.push(response.json);
  };
  for (const session of (await store.listSessions()).map((record) => record.id)) {
    await get(`/v1/sessions/${session}`);
    bodies.push(await store.exportSession(session));
  }
  await get('/v1/requests');
  for (const request of await store.listApprovals()) await get(`/v1/requests/${request.id}`);
  if (world.separate !== null)
    for (const request of await world.separate.listApprovals()) await get(`/v1/requests/${request.id}`);
  await get('/v1/approvals');
  await get('/v1/audit');
  const verify = await server.call('GET', '/v1/audit/verify', { as: 'alice' });
  expect(verify.json.ok).toBe(true);
  if (world.runs !== null) {
    await get('/v1/runs');
    for (const id of seeded.runs) {
      const run = await server.call('GET', `/v1/runs/${id}`, { as: 'alice' });
      expect([200, 404]).toContain(run.status);
      bodies.push(run.json);
    }
    if (world.nobodys !== null) await get(`/v1/runs/${world.nobodys}`);
  }
  const text = JSON.stringify(bodies);
  expect(text).not.toContain('$erased');
  expect(text).not.toContain('[erased]');
}

/** The erasure's options for `world`: its store's keys, and a separate store with its own. */
function eraseOptions(world: World, customer: string, crash?: Crash) {
  const { separate } = world;
  return {
    by: 'dpo',
    keys: forgetter(world.store, crash),
    state: [{ namespace: 'bookstore', key: `note:${customer}` }],
    ...(separate === null
      ? {}
      : {
          checkpoints: crash ? failing(separate, crash) : separate,
          checkpointKeys: forgetter(separate, crash),
        }),
  };
}

async function interruptedAtEveryStep(world: World, tag: string) {
  const { store } = world;
  let points = 0;
  for (const mode of ['before', 'after'] as const) {
    for (let at = 1; ; at++) {
      expect(at, 'the erasure never got through').toBeLessThan(80);
      const seeded = await seed(world, `${tag}${mode[0]}${at}`);
      const crash = new Crash(at, mode);
      const first = await erasePrincipal(
        failing(store, crash),
        seeded.customer,
        eraseOptions(world, seeded.customer, crash),
      ).catch((error: unknown) => {
        if (error instanceof Injected) return null;
        throw error;
      });
      if (first !== null) {
        // Past the last call: nothing failed, so this one erasure did it all.
        expect(crash.calls).toBeLessThan(at);
        expect(await left(world, seeded)).toEqual(NOTHING_LEFT);
        await nobodysRunStands(world);
        break;
      }
      points += 1;
      const stopped = await left(world, seeded);
      // No key goes while anything sealed with it is left to read.
      if (!stopped.key) expect({ at, mode, ...stopped }).toMatchObject({ sessions: 0, requests: 0 });
      if (world.separate !== null && !stopped.separateKey)
        expect({ at, mode, ...stopped }).toMatchObject({ separateRequests: 0 });
      expect({ at, mode, unreadable: stopped.unreadable }).toEqual({ at, mode, unreadable: [] });
      await readersAnswer(world, seeded);

      // The same erasure again completes it, and reports what it did itself.
      const again = await erasePrincipal(store, seeded.customer, eraseOptions(world, seeded.customer));
      expect({ at, mode, sessions: again.counts.sessions, keyForgotten: again.keyForgotten }).toEqual({
        at,
        mode,
        sessions: stopped.sessions,
        keyForgotten: stopped.key || stopped.separateKey || stopped.runKeys > 0,
      });
      expect(again.stateKeys).toBe(stopped.state ? 1 : 0);
      expect(again.erased).toBe(
        stopped.sessions + stopped.requests + stopped.separateRequests + stopped.checkpoints > 0 ||
          stopped.key ||
          stopped.separateKey ||
          stopped.runKeys > 0 ||
          stopped.state,
      );
      expect(await left(world, seeded)).toEqual(NOTHING_LEFT);
      expect([undefined, null]).toContain(await store.getState(INTENTS, seeded.customer));
      await nobodysRunStands(world);
      await readersAnswer(world, seeded);
      const audit = JSON.stringify(await store.listAudit());
      expect(audit).not.toContain(SECRET);
      // The other customer is untouched.
      expect((await store.loadMessages(`${seeded.label}-other`)).length).toBeGreaterThan(0);
    }
  }
  // Some points of each kind were hit (the erasure makes a dozen or more calls).
  expect(points).toBeGreaterThan(10);
}

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A world over `store`; runs in it (`runs: 'same'`) or in a separate encrypted file: store. */
async function world(store: Store, runs: 'none' | 'same' | 'file'): Promise<World> {
  const separate =
    runs === 'file'
      ? await openCheckpointStore(`file:${mkdtempSync(join(tmpdir(), 'countersign-erase-runs-'))}`, { env })
      : null;
  const book = runs === 'none' ? null : (separate ?? (store as unknown as CheckpointStore));
  const server = testServer({
    store,
    model: createDemoModel(),
    ...(book === null ? {} : { checkpoints: book, workflows: [refundWorkflow, supportWorkflow] }),
  });
  cleanups.push(async () => {
    await server.close();
    await separate?.close();
    await store.close();
  });
  const nobodys = book === null ? null : 'refund-nobodys';
  if (nobodys !== null) await startRun(server, { workflow: 'refund', run: nobodys, input: 1043 });
  return { server, store, runs: book, separate, nobodys };
}

/**
 * The customer chats on while their erasure runs: a session written after the rows were
 * removed but before the key was destroyed is sealed with that key. It must not be left
 * behind unreadable: the erasure removes it too, and every reader still answers.
 */
async function chatDuringErasure(world: World, tag: string) {
  const { server, store } = world;
  const seeded = await seed(world, tag);
  const keyring = keyringOf(store);
  if (keyring === null) throw new Error('no keyring');
  let late = 0;
  const report = await erasePrincipal(store, seeded.customer, {
    by: 'dpo',
    state: [{ namespace: 'bookstore', key: `note:${seeded.customer}` }],
    keys: {
      forget: async (principal) => {
        await chat(server, `${tag}-late`, seeded.customer, `Still there? I live at ${SECRET}.`);
        late = (await store.listSessions()).filter((session) => session.principal === seeded.customer).length;
        return keyring.forget(principal);
      },
      forgetRun: (run) => keyring.forgetRun(run),
      holds: (principal) => keyring.holds(principal),
    },
  });
  // The late session was there when the key went.
  expect(late).toBe(1);
  expect(report.keyForgotten).toBe(true);
  expect(await left(world, seeded)).toEqual(NOTHING_LEFT);
  await readersAnswer(world, seeded);
}

const sqlitePath = (label: string) =>
  join(mkdtempSync(join(tmpdir(), `countersign-erase-${label}-`)), 'store.db');

describe('an erasure interrupted between any two steps, then run again', () => {
  it('memory', async () => {
    await interruptedAtEveryStep(await world(await openStore('memory:', { env }), 'none'), 'm');
  });

  it('memory, the customer chatting while it runs', async () => {
    await chatDuringErasure(await world(await openStore('memory:', { env }), 'none'), 'mc');
  });

  it('SQLite, the customer chatting while it runs', async () => {
    await chatDuringErasure(
      await world(await openStore(`sqlite:${sqlitePath('late')}`, { env }), 'none'),
      'sc',
    );
  });

  it('SQLite', async () => {
    await interruptedAtEveryStep(
      await world(await openStore(`sqlite:${sqlitePath('crash')}`, { env }), 'same'),
      's',
    );
  });

  // A file: store writes each checkpoint, request and key file with fsync: slower rounds.
  it('SQLite, its runs in a separate encrypted file: store', { timeout: 120_000 }, async () => {
    await interruptedAtEveryStep(
      await world(await openStore(`sqlite:${sqlitePath('file')}`, { env }), 'file'),
      'sf',
    );
  });

  describe.skipIf(pg === null)('PostgreSQL', () => {
    const schema = freshSchema('erase_crash');
    afterAll(async () => {
      await dropSchema(schema);
    });

    it('every step', async () => {
      await interruptedAtEveryStep(await world(await openStore(storeUrl(schema), { env }), 'same'), 'p');
    });

    it('the customer chatting while it runs', async () => {
      await chatDuringErasure(await world(await openStore(storeUrl(schema), { env }), 'none'), 'pc');
    });
  });
});
