import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { supportWorkflow } from '../../examples/bookstore/app.ts';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { keyringOf } from '../../src/crypto/encrypted-store.ts';
import { type DataKeyForgetter, erasePrincipal } from '../../src/erasure/erase-principal.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { DataKeys } from '../../src/store/ports/data-keys.ts';
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
 * nothing of the customer is left. Memory, SQLite and PostgreSQL, all with encryption keys set.
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

function forgetter(store: Store, crash?: Crash): DataKeyForgetter {
  const keyring = keyringOf(store);
  if (keyring === null) throw new Error('no keyring');
  const step = <T>(run: () => Promise<T>) => (crash ? crash.step(run) : run());
  return {
    forget: (principal) => step(() => keyring.forget(principal)),
    forgetRun: (run) => step(() => keyring.forgetRun(run)),
    holds: (principal) => step(() => keyring.holds(principal)),
  };
}

interface Seeded {
  label: string;
  customer: string;
  other: string;
  sessions: string[];
  run: string | null;
}

async function chat(server: TestServer, session: string, user: string, text: string): Promise<string[]> {
  const turn = await server.call('POST', `/v1/sessions/${session}/messages`, {
    as: 'svc',
    body: { text, user, agent: 'bookstore' },
  });
  expect(turn.status).toBe(200);
  return (turn.json.approvals as Array<{ id: string }>).map((approval) => approval.id);
}

/** One customer with a waiting request, a decided and executed one, a waiting run, app state. */
async function seed(server: TestServer, store: Store, label: string, runs: boolean): Promise<Seeded> {
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
  let run: string | null = null;
  if (runs) {
    run = `refund-${label}`;
    const started = await server.call('POST', '/v1/runs', {
      as: 'svc',
      body: { workflow: 'refund', run, input: 1040, user: customer },
    });
    expect(started.status).toBe(200);
  }
  await store.setState('bookstore', `note:${customer}`, { address: SECRET });
  // The memory store seals nothing, so nothing made its key yet: make one, to see it destroyed.
  await keyringOf(store)?.ready({ scope: `principal:${customer}` });
  return { label, customer, other, sessions, run };
}

const keys = (store: Store) => store as unknown as DataKeys;

interface Left {
  sessions: number;
  requests: number;
  checkpoint: boolean;
  key: boolean;
  runKey: boolean;
  state: boolean;
}

/** What a finished erasure leaves of the customer: nothing. */
const NOTHING_LEFT: Left = {
  sessions: 0,
  requests: 0,
  checkpoint: false,
  key: false,
  runKey: false,
  state: false,
};

async function left(store: Store, seeded: Seeded): Promise<Left> {
  const { customer, run } = seeded;
  const sessions = (await store.listSessions()).filter((session) => session.principal === customer);
  const requests = (await store.listApprovals()).filter((request) => request.customer === customer);
  const checkpoint =
    run !== null && 'latestCheckpoint' in store
      ? (await (store as unknown as { latestCheckpoint(run: string): Promise<unknown> }).latestCheckpoint(
          run,
        )) !== null
      : false;
  const state = await store.getState('bookstore', `note:${customer}`);
  return {
    sessions: sessions.length,
    requests: requests.length,
    checkpoint,
    key: (await keys(store).liveDataKey(`principal:${customer}`)) !== null,
    runKey: run !== null && (await keys(store).liveDataKey(`run:${run}`)) !== null,
    state: state !== undefined && state !== null,
  };
}

/** Every reader of what is left answers, in the shape the API promises, with nothing undecodable. */
async function readersAnswer(server: TestServer, store: Store, seeded: Seeded): Promise<void> {
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
  await get('/v1/approvals');
  await get('/v1/audit');
  const verify = await server.call('GET', '/v1/audit/verify', { as: 'alice' });
  expect(verify.json.ok).toBe(true);
  if (seeded.run !== null) {
    await get('/v1/runs');
    const run = await server.call('GET', `/v1/runs/${seeded.run}`, { as: 'alice' });
    expect([200, 404]).toContain(run.status);
    bodies.push(run.json);
  }
  const text = JSON.stringify(bodies);
  expect(text).not.toContain('$erased');
  expect(text).not.toContain('[erased]');
}

async function interruptedAtEveryStep(server: TestServer, store: Store, runs: boolean, tag: string) {
  const state = (customer: string) => [{ namespace: 'bookstore', key: `note:${customer}` }];
  let points = 0;
  for (const mode of ['before', 'after'] as const) {
    for (let at = 1; ; at++) {
      expect(at, 'the erasure never got through').toBeLessThan(60);
      const seeded = await seed(server, store, `${tag}${mode[0]}${at}`, runs);
      const crash = new Crash(at, mode);
      const first = await erasePrincipal(failing(store, crash), seeded.customer, {
        by: 'dpo',
        keys: forgetter(store, crash),
        state: state(seeded.customer),
      }).catch((error: unknown) => {
        if (error instanceof Injected) return null;
        throw error;
      });
      if (first !== null) {
        // Past the last call: nothing failed, so this one erasure did it all.
        expect(crash.calls).toBeLessThan(at);
        expect(await left(store, seeded)).toEqual(NOTHING_LEFT);
        break;
      }
      points += 1;
      const stopped = await left(store, seeded);
      // No key goes while anything sealed with it is left to read.
      if (!stopped.key) expect({ at, mode, ...stopped }).toMatchObject({ sessions: 0, requests: 0 });
      if (!stopped.runKey) expect({ at, mode, ...stopped }).toMatchObject({ checkpoint: false });
      await readersAnswer(server, store, seeded);

      // The same erasure again completes it, and reports what it did itself.
      const again = await erasePrincipal(store, seeded.customer, {
        by: 'dpo',
        keys: forgetter(store),
        state: state(seeded.customer),
      });
      expect({ at, mode, sessions: again.counts.sessions, keyForgotten: again.keyForgotten }).toEqual({
        at,
        mode,
        sessions: stopped.sessions,
        keyForgotten: stopped.key || stopped.runKey,
      });
      expect(again.stateKeys).toBe(stopped.state ? 1 : 0);
      expect(again.erased).toBe(
        stopped.sessions + stopped.requests > 0 ||
          stopped.checkpoint ||
          stopped.key ||
          stopped.runKey ||
          stopped.state,
      );
      expect(await left(store, seeded)).toEqual(NOTHING_LEFT);
      expect([undefined, null]).toContain(await store.getState(INTENTS, seeded.customer));
      await readersAnswer(server, store, seeded);
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

function serve(store: Store, runs: boolean): TestServer {
  const server = runs
    ? testServer({ store, checkpoints: store as never, workflows: [refundWorkflow, supportWorkflow] })
    : testServer({ store });
  cleanups.push(async () => {
    await server.close();
    await store.close();
  });
  return server;
}

/**
 * The customer chats on while their erasure runs: a session written after the rows were
 * removed but before the key was destroyed is sealed with that key. It must not be left
 * behind unreadable: the erasure removes it too, and every reader still answers.
 */
async function chatDuringErasure(server: TestServer, store: Store, tag: string) {
  const seeded = await seed(server, store, tag, false);
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
  expect(await left(store, seeded)).toEqual(NOTHING_LEFT);
  await readersAnswer(server, store, seeded);
}

describe('an erasure interrupted between any two steps, then run again', () => {
  it('memory', async () => {
    const store = await openStore('memory:', { env });
    await interruptedAtEveryStep(serve(store, false), store, false, 'm');
  });

  it('memory, the customer chatting while it runs', async () => {
    const store = await openStore('memory:', { env });
    await chatDuringErasure(serve(store, false), store, 'mc');
  });

  it('SQLite, the customer chatting while it runs', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'countersign-erase-late-')), 'store.db');
    const store = await openStore(`sqlite:${path}`, { env });
    await chatDuringErasure(serve(store, false), store, 'sc');
  });

  it('SQLite', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'countersign-erase-crash-')), 'store.db');
    const store = await openStore(`sqlite:${path}`, { env });
    await interruptedAtEveryStep(serve(store, true), store, true, 's');
  });

  describe.skipIf(pg === null)('PostgreSQL', () => {
    const schema = freshSchema('erase_crash');
    afterAll(async () => {
      await dropSchema(schema);
    });

    it('every step', async () => {
      const store = await openStore(storeUrl(schema), { env });
      await interruptedAtEveryStep(serve(store, true), store, true, 'p');
    });

    it('the customer chatting while it runs', async () => {
      const store = await openStore(storeUrl(schema), { env });
      await chatDuringErasure(serve(store, false), store, 'pc');
    });
  });
});
