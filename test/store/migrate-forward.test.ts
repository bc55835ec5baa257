import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bookstoreAgent, refundWorkflow, supportWorkflow } from '../../examples/bookstore/app.ts';
import { kitchenAgent } from '../../examples/kitchen/app.ts';
import {
  type Agent,
  type CheckpointStore,
  CountersignError,
  createAgent,
  createDemoModel,
  createWorkflowRunner,
  listPending,
  openCheckpointStore,
  openStore,
  type Store,
  verifyAudit,
  type WorkflowRunner,
} from '../../src/index.ts';
import { runCli } from '../helpers/cli.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl, withAdmin } from '../helpers/postgres.ts';

/**
 * Stores written by countersign 0.1.0 (test/fixtures/stores/v0-1, never regenerated) open
 * with this version, migrate, and keep working: what was pending stays decidable and runs
 * once, waiting runs can be answered and finish, decided requests keep their decisions and
 * the audit chain still verifies. Everything is checked through the public API, and lists are
 * checked for "contains these ids with these statuses", never for exact lengths, so a new
 * request model may list more (port requests among the approvals, say) without failing this.
 */

const FIXTURES = join(import.meta.dirname, '../fixtures/stores/v0-1');

interface FixtureManifest {
  sessions: string[];
  pendingRequests: {
    cancel1050: string;
    kitchenOnions: string;
    cancel1043: string;
    supportWrapped: string;
  };
  decidedRequests: Record<string, { id: string; status: string; verdictBy: string | null }>;
  executedRequests: string[];
  standingRules: {
    active: { id: string; session: string; tool: string };
    revoked: { id: string; session: string; tool: string };
  };
  runs: Record<string, { run: string; workflow: string; status: string; requests: string[] }>;
  portRequests: {
    refundWaiting: { run: string; id: string; port: string };
    refundAnswered: { run: string; id: string; port: string };
    refundDeclined: { run: string; id: string; port: string };
    refundExpired: { run: string; id: string; port: string };
    supportWaiting: { run: string; id: string; port: string };
  };
  audit: { entries: number; head: { seq: number; hash: string }; byKind: Record<string, number> };
}

const manifest = JSON.parse(readFileSync(join(FIXTURES, 'manifest.json'), 'utf8')) as {
  postgresSchema: string;
  sqlite: FixtureManifest;
  postgres: FixtureManifest;
};

const pgUrl = await postgresForTests();
const schemas: string[] = [];
afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
});

/** A fresh copy of the SQLite fixture; returns its COUNTERSIGN_STORE spec. */
function sqliteCopy(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'countersign-fixture-')), 'countersign.db');
  copyFileSync(join(FIXTURES, 'countersign.db'), path);
  return `sqlite:${path}`;
}

/**
 * Replays the dump into a schema of its own. psql meta-commands (pg_dump writes `\restrict`
 * lines since 15.14 and 17.6) are psql's, not SQL, so they are left out; the schema name is
 * the only thing renamed.
 */
async function postgresCopy(): Promise<string> {
  const schema = freshSchema('fwd_v0_1');
  schemas.push(schema);
  const sql = readFileSync(join(FIXTURES, 'postgres.sql'), 'utf8')
    .split('\n')
    .filter((line) => !line.startsWith('\\'))
    .join('\n')
    .replace(new RegExp(`\\b${manifest.postgresSchema}\\b`, 'g'), schema);
  await withAdmin((client) => client.query(sql));
  return storeUrl(schema);
}

interface Opened {
  store: Store;
  checkpoints: CheckpointStore;
  bookstore: Agent;
  kitchen: Agent;
  runner: WorkflowRunner;
  close(): Promise<void>;
}

async function open(spec: string): Promise<Opened> {
  const store = await openStore(spec);
  const checkpoints = await openCheckpointStore(spec, { store: async () => store });
  const model = createDemoModel();
  return {
    store,
    checkpoints,
    bookstore: createAgent({ ...bookstoreAgent.options, store, model }),
    kitchen: createAgent({ ...kitchenAgent.options, store, model }),
    runner: createWorkflowRunner({
      workflows: [refundWorkflow, supportWorkflow],
      checkpoints,
      bindAgent: (agent) => agent.with({ store, model }),
    }),
    close: () => store.close(),
  };
}

async function codeOf(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (error) {
    if (CountersignError.is(error)) return error.code;
    throw error;
  }
  throw new Error('Expected a countersign error, got success.');
}

/** The written chain is intact and still reaches the head the fixture recorded. */
async function expectChainAsWritten(store: Store, fixture: FixtureManifest): Promise<void> {
  const verdict = await verifyAudit(store);
  expect(verdict, JSON.stringify(verdict)).toMatchObject({ ok: true });
  const entries = await store.listAudit();
  expect(entries.length).toBeGreaterThanOrEqual(fixture.audit.entries);
  expect(entries.find((entry) => entry.seq === fixture.audit.head.seq)?.hash).toBe(fixture.audit.head.hash);
}

const backends: Array<[string, FixtureManifest, () => Promise<string>, boolean]> = [
  ['sqlite', manifest.sqlite, async () => sqliteCopy(), true],
  ['postgres', manifest.postgres, postgresCopy, pgUrl !== null],
];

describe.each(backends)('a %s store written by countersign 0.1.0', (_kind, fixture, copy, runs) => {
  describe.runIf(runs)('opens, migrates and keeps working', () => {
    it('opens twice (the migration is idempotent) and its audit chain verifies as written', async () => {
      const spec = await copy();
      const first = await open(spec);
      await expectChainAsWritten(first.store, fixture);
      const before = (await first.store.listApprovals()).map((r) => [r.id, r.status]);
      await first.close();

      const second = await open(spec);
      try {
        await expectChainAsWritten(second.store, fixture);
        expect((await second.store.listApprovals()).map((r) => [r.id, r.status])).toEqual(before);
        for (const session of fixture.sessions) {
          expect(await second.store.getSession(session), session).not.toBeNull();
          expect((await second.store.loadMessages(session)).length, session).toBeGreaterThan(0);
        }
        const kinds: Record<string, number> = {};
        for (const entry of await second.store.listAudit()) kinds[entry.kind] = (kinds[entry.kind] ?? 0) + 1;
        for (const [kind, count] of Object.entries(fixture.audit.byKind)) {
          expect(kinds[kind] ?? 0, kind).toBeGreaterThanOrEqual(count);
        }
      } finally {
        await second.close();
      }
    });

    it('decided requests keep their status and decision; the standing rule still approves by itself', async () => {
      const s = await open(await copy());
      try {
        for (const [key, decided] of Object.entries(fixture.decidedRequests)) {
          const row = await s.store.getApproval(decided.id);
          expect(row?.status, key).toBe(decided.status);
          expect(row?.decision?.by, key).toBe(decided.verdictBy);
        }
        const approved = fixture.decidedRequests.approved!;
        expect(await codeOf(s.bookstore.approve(approved.id, { by: 'carol' }))).toBe('ALREADY_DECIDED');
        expect(await codeOf(s.bookstore.approve(fixture.decidedRequests.rejected!.id, { by: 'carol' }))).toBe(
          'ALREADY_DECIDED',
        );
        expect(await codeOf(s.bookstore.approve(fixture.decidedRequests.expired!.id, { by: 'carol' }))).toBe(
          'EXPIRED',
        );
        for (const id of fixture.executedRequests) {
          expect((await s.store.getExecution(id))?.status, id).toBe('succeeded');
        }

        const { active, revoked } = fixture.standingRules;
        expect(await s.store.listRules({ session: active.session })).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ id: active.id, tool: active.tool, revokedAt: null }),
          ]),
        );
        expect((await s.store.getRule(revoked.id))?.revokedAt).toEqual(expect.any(String));
        // Still in force: a new addition on that session runs without asking anyone.
        const turn = await s.kitchen.chat(active.session, 'Put 3 apples on the list.', {
          principal: 'k-1',
          by: 'k-1',
        });
        expect(turn).toMatchObject({ status: 'completed', approvals: [] });
        expect(await s.store.getState('kitchen', 'shopping-list')).toEqual(
          expect.arrayContaining(['3 apples']),
        );
        await expectChainAsWritten(s.store, fixture);
      } finally {
        await s.close();
      }
    });

    it('pending tool-call requests are still pending; approving one runs it exactly once and the session goes on', async () => {
      const s = await open(await copy());
      try {
        const { cancel1050, kitchenOnions, cancel1043, supportWrapped } = fixture.pendingRequests;
        const pending = await s.store.listApprovals({ status: 'pending' });
        for (const id of [cancel1050, kitchenOnions, cancel1043, supportWrapped]) {
          expect(pending, id).toEqual(
            expect.arrayContaining([expect.objectContaining({ id, status: 'pending' })]),
          );
        }
        expect((await listPending(s.store)).map((view) => view.id)).toEqual(
          expect.arrayContaining([cancel1050, kitchenOnions, cancel1043, supportWrapped]),
        );

        const turn = await s.bookstore.approve(cancel1050, { by: 'alice' });
        expect(turn.status).toBe('completed');
        expect(turn.reply).toMatch(/1050/);
        expect(await s.store.getApproval(cancel1050)).toMatchObject({
          status: 'approved',
          decision: { verdict: 'approved', by: 'alice' },
        });
        expect(await s.store.getState('bookstore', 'order:1050')).toMatchObject({ status: 'Cancelled' });
        expect(await codeOf(s.bookstore.approve(cancel1050, { by: 'bob' }))).toBe('ALREADY_DECIDED');
        const ledger = await s.store.listExecutions({ session: 'fx-pending-cancel' });
        expect(ledger.filter((row) => row.requestId === cancel1050)).toMatchObject([
          { tool: 'cancel_order', status: 'succeeded', attempts: 1 },
        ]);

        // The kitchen's own assistant: the person who asked approves it.
        const added = await s.kitchen.approve(kitchenOnions, { by: 'k-3' });
        expect(added.status).toBe('completed');
        expect(await s.store.getState('kitchen', 'shopping-list')).toEqual(
          expect.arrayContaining(['4 onions']),
        );

        const rejected = await s.bookstore.reject(cancel1043, { by: 'bob', reason: 'It has shipped.' });
        expect(rejected.status).toBe('completed');
        expect((await s.store.getApproval(cancel1043))?.status).toBe('rejected');
        expect(await s.store.getExecution(cancel1043)).toBeNull();

        await expectChainAsWritten(s.store, fixture);
        const decided = (await s.store.listAudit()).filter(
          (entry) => entry.kind === 'request.decided' && entry.seq > fixture.audit.head.seq,
        );
        expect(decided.map((entry) => entry.requestId)).toEqual(
          expect.arrayContaining([cancel1050, kitchenOnions, cancel1043]),
        );
      } finally {
        await s.close();
      }
    });

    it('the waiting refund run takes its answer once and completes; finished runs stay finished', async () => {
      const s = await open(await copy());
      try {
        const { refundWaiting, refundAnswered, refundDeclined, refundExpired } = fixture.portRequests;
        const resumed = await s.runner.resume(refundWaiting.run);
        expect(resumed).toMatchObject({
          status: 'awaiting_input',
          requests: [{ id: refundWaiting.id, port: 'manager-approval' }],
        });
        const done = await s.runner.respond(
          refundWaiting.run,
          refundWaiting.id,
          { approved: true, note: 'Approved, photo checked.' },
          { by: 'mona' },
        );
        expect(done).toMatchObject({
          status: 'completed',
          requests: [],
          outputs: ['Refund issued: 35.00 for order 1040. Manager note: Approved, photo checked.'],
        });
        expect(
          await codeOf(
            s.runner.respond(
              refundWaiting.run,
              refundWaiting.id,
              { approved: false, note: 'no' },
              { by: 'max' },
            ),
          ),
        ).toBe('ALREADY_DECIDED');

        expect(
          await codeOf(
            s.runner.respond(
              refundAnswered.run,
              refundAnswered.id,
              { approved: true, note: 'again' },
              { by: 'max' },
            ),
          ),
        ).toBe('ALREADY_DECIDED');
        expect(
          await codeOf(
            s.runner.respond(
              refundExpired.run,
              refundExpired.id,
              { approved: true, note: 'late' },
              { by: 'max' },
            ),
          ),
        ).toBe('EXPIRED');
        const runs = await s.runner.runs();
        expect(runs).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ run: refundWaiting.run, status: 'completed' }),
            expect.objectContaining({ run: refundAnswered.run, status: 'completed' }),
            expect.objectContaining({ run: refundDeclined.run, status: 'completed' }),
            expect.objectContaining({ run: refundExpired.run, status: 'expired' }),
          ]),
        );
        await expectChainAsWritten(s.store, fixture);
      } finally {
        await s.close();
      }
    });

    it('the agent inside the support run: answering the run request decides the wrapped call once', async () => {
      const s = await open(await copy());
      try {
        const { supportWaiting } = fixture.portRequests;
        const wrapped = fixture.pendingRequests.supportWrapped;
        const done = await s.runner.respond(
          supportWaiting.run,
          supportWaiting.id,
          { approved: true },
          { by: 'alice' },
        );
        expect(done.status).toBe('completed');
        expect((done.outputs[0] as { reply: string | null }).reply).toMatch(/1044/);
        expect(await s.store.getApproval(wrapped)).toMatchObject({
          status: 'approved',
          decision: { by: 'alice' },
        });
        expect(await s.store.getExecution(wrapped)).toMatchObject({ status: 'succeeded', attempts: 1 });
        expect(await s.store.getState('bookstore', 'order:1044')).toMatchObject({ status: 'Cancelled' });
        expect(
          await codeOf(
            s.runner.respond(supportWaiting.run, supportWaiting.id, { approved: true }, { by: 'bob' }),
          ),
        ).toBe('ALREADY_DECIDED');
        expect(await codeOf(s.bookstore.approve(wrapped, { by: 'bob' }))).toBe('ALREADY_DECIDED');
        await expectChainAsWritten(s.store, fixture);
      } finally {
        await s.close();
      }
    });

    it('`countersign audit --verify` on a copy exits 0', async () => {
      const run = await runCli(['audit', '--verify', '--json'], { COUNTERSIGN_STORE: await copy() });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.json).toMatchObject({ ok: true });
    });
  });
});
