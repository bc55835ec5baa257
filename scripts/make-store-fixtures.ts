/**
 * Writes the checked-in stores of test/fixtures/stores/v0-1/: one SQLite file and one
 * PostgreSQL schema dump, each holding what countersign 0.1.0 keeps (pending and decided
 * tool-call approvals, a standing rule, workflow runs waiting on a port request and finished
 * ones, an agent inside a workflow waiting on its approval, and the audit entries of all of
 * it), written through the public API only, as an app of that version would have.
 *
 * The fixtures exist to pin that later versions open such stores and keep them working
 * (test/store/migrate-forward.test.ts). They were written once, at commit 06e835c; do not
 * regenerate them with a later version, that would test nothing. The script refuses to
 * overwrite them unless given --force.
 *
 *   node_modules/.bin/node scripts/make-store-fixtures.ts [--force]
 *
 * PostgreSQL: COUNTERSIGN_TEST_PG (default postgres://postgres@127.0.0.1:5432/postgres);
 * pg_dump must be on PATH and of the server's major version.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { bookstoreAgent, refundWorkflow } from '../examples/bookstore/app.ts';
import { createSupportWorkflow } from '../examples/bookstore/support-workflow.ts';
import { kitchenAgent } from '../examples/kitchen/app.ts';
import {
  type Agent,
  type CheckpointStore,
  createAgent,
  createDemoModel,
  createWorkflowRunner,
  openCheckpointStore,
  openStore,
  revokeRule,
  type Store,
  sweepExpired,
  verifyAudit,
} from '../src/index.ts';

const OUT_DIR = resolve(import.meta.dirname, '../test/fixtures/stores/v0-1');
const SQLITE_FILE = join(OUT_DIR, 'countersign.db');
const PG_DUMP_FILE = join(OUT_DIR, 'postgres.sql');
const MANIFEST_FILE = join(OUT_DIR, 'manifest.json');
/** The schema the dump names; the forward test renames it to a fresh one when restoring. */
const FIXTURE_SCHEMA = 'cs_fixture_v0_1';
const PG_URL = process.env.COUNTERSIGN_TEST_PG?.trim() || 'postgres://postgres@127.0.0.1:5432/postgres';

/** 100 years: the pending requests must still be pending whenever the fixture is opened. */
const FOREVER = '36500d';

/** What one backend's fixture holds, by id, for the test to look up. */
interface BackendManifest {
  sessions: string[];
  pendingRequests: Record<string, string>;
  decidedRequests: Record<string, { id: string; status: string; verdictBy: string | null }>;
  executedRequests: string[];
  standingRules: Record<string, { id: string; session: string; tool: string; revoked: boolean }>;
  runs: Record<string, { run: string; workflow: string; status: string; requests: string[] }>;
  portRequests: Record<string, { run: string; id: string; port: string }>;
  audit: { entries: number; head: { seq: number; hash: string } | null; byKind: Record<string, number> };
}

function must<T>(value: T | undefined | null, what: string): T {
  if (value === undefined || value === null) throw new Error(`Fixture step failed: no ${what}.`);
  return value;
}

async function populate(store: Store, checkpoints: CheckpointStore): Promise<BackendManifest> {
  const model = createDemoModel();
  const bookstore = createAgent({ ...bookstoreAgent.options, store, model, approvalTtl: FOREVER });
  const kitchen = createAgent({ ...kitchenAgent.options, store, model, approvalTtl: FOREVER });
  // Expires at once: the source of the expired tool-call request.
  const hasty = createAgent({ ...bookstoreAgent.options, store, model, approvalTtl: 1 });

  const m: BackendManifest = {
    sessions: [],
    pendingRequests: {},
    decidedRequests: {},
    executedRequests: [],
    standingRules: {},
    runs: {},
    portRequests: {},
    audit: { entries: 0, head: null, byKind: {} },
  };

  async function ask(agent: Agent, session: string, text: string, principal: string) {
    const turn = await agent.chat(session, text, { principal, by: 'desk' });
    if (!m.sessions.includes(session)) m.sessions.push(session);
    return must(turn.approvals[0], `request raised on ${session}`);
  }
  async function recordDecided(key: string, id: string) {
    const row = must(await store.getApproval(id), `request ${id}`);
    m.decidedRequests[key] = { id, status: row.status, verdictBy: row.decision?.by ?? null };
  }

  // Approved by a person and executed: a ledger row. Order 1040 is delivered, so the tool
  // answers that it cannot be cancelled; it ran all the same, once.
  const approved = await ask(bookstore, 'fx-approved', 'Please cancel my order 1040.', 'c-100');
  await bookstore.approve(approved.id, { by: 'alice' });
  await recordDecided('approved', approved.id);
  m.executedRequests.push(approved.id);

  const rejected = await ask(bookstore, 'fx-rejected', 'Please cancel my order 1043.', 'c-100');
  await bookstore.reject(rejected.id, {
    by: 'bob',
    reason: 'The order has shipped; offer a return instead.',
  });
  await recordDecided('rejected', rejected.id);

  const expired = await ask(hasty, 'fx-expired', 'Please cancel my order 1043.', 'c-100');
  while (Date.now() <= Date.parse(expired.expiresAt)) await new Promise((r) => setTimeout(r, 2));
  const swept = await sweepExpired(store);
  if (!swept.includes(expired.id)) throw new Error('The expiry sweep did not expire the hasty request.');
  await recordDecided('expired', expired.id);

  // A new message while a request waits answers it "moved on".
  const movedOn = await ask(bookstore, 'fx-moved-on', 'Please cancel my order 1043.', 'c-100');
  await bookstore.chat('fx-moved-on', "What's the status of order 1043?", { principal: 'c-100', by: 'desk' });
  await recordDecided('movedOn', movedOn.id);

  // A standing rule ("always" for the tool) and a later call it approved by itself.
  const ruled = await ask(kitchen, 'fx-rule', "We're out of eggs, put a dozen on the list.", 'k-1');
  await kitchen.decide(ruled.id, { approved: true, by: 'k-1', remember: 'tool' });
  await recordDecided('ruleSource', ruled.id);
  m.executedRequests.push(ruled.id);
  const auto = await kitchen.chat('fx-rule', 'Put 2 lemons on the list.', { principal: 'k-1', by: 'k-1' });
  if (auto.status !== 'completed') throw new Error(`The standing rule did not approve: ${auto.status}.`);
  const rule = must((await store.listRules({ session: 'fx-rule' }))[0], 'standing rule on fx-rule');
  m.standingRules.active = { id: rule.id, session: rule.session, tool: rule.tool, revoked: false };
  const autoApproved = (await store.listApprovals({ session: 'fx-rule' })).find((r) => r.id !== ruled.id);
  await recordDecided('autoApproved', must(autoApproved, 'auto-approved request').id);
  m.executedRequests.push(must(autoApproved, 'auto-approved request').id);

  // A rule that was revoked again.
  const revokedSource = await ask(kitchen, 'fx-rule-revoked', "We're out of tea, put 1 on the list.", 'k-2');
  await kitchen.decide(revokedSource.id, { approved: true, by: 'k-2', remember: 'tool' });
  m.executedRequests.push(revokedSource.id);
  const toRevoke = must((await store.listRules({ session: 'fx-rule-revoked' }))[0], 'rule to revoke');
  await revokeRule(store, toRevoke.id, 'k-2');
  m.standingRules.revoked = {
    id: toRevoke.id,
    session: toRevoke.session,
    tool: toRevoke.tool,
    revoked: true,
  };

  // Pending, for a century: the forward test decides them.
  m.pendingRequests.cancel1050 = (
    await ask(bookstore, 'fx-pending-cancel', 'Please cancel my order 1050.', 'c-200')
  ).id;
  m.pendingRequests.kitchenOnions = (
    await ask(kitchen, 'fx-pending-kitchen', 'Put 4 onions on the list.', 'k-3')
  ).id;
  m.pendingRequests.cancel1043 = (
    await ask(bookstore, 'fx-pending-reject', 'Please cancel my order 1043.', 'c-100')
  ).id;

  // Workflows: the runner writes into the same store, linking its entries onto the chain.
  const supportAgent = createAgent({ ...bookstoreAgent.options, approvalTtl: FOREVER });
  const workflows = [refundWorkflow, createSupportWorkflow(supportAgent)];
  const bindAgent = (agent: Agent) => agent.with({ store, model });
  const runner = createWorkflowRunner({ workflows, checkpoints, bindAgent, requestTtl: FOREVER });
  // Long enough for the start to see its request waiting, short enough to wait out.
  const hastyRunner = createWorkflowRunner({ workflows, checkpoints, bindAgent, requestTtl: 300 });

  const recordRun = async (key: string, run: string) => {
    const view = await runner.resume(run);
    m.runs[key] = {
      run,
      workflow: view.workflow,
      status: view.status,
      requests: view.requests.map((r) => r.id),
    };
    return view;
  };

  const waiting = await runner.start('refund', 'fx-refund-waiting', 1040, { by: 'backend' });
  const waitingRequest = must(waiting.requests[0], 'refund port request');
  m.portRequests.refundWaiting = { run: waiting.run, id: waitingRequest.id, port: waitingRequest.port };
  await recordRun('refundWaiting', waiting.run);

  const done = await runner.start('refund', 'fx-refund-done', 1043, { by: 'backend' });
  const doneRequest = must(done.requests[0], 'refund port request');
  const finished = await runner.respond(
    done.run,
    doneRequest.id,
    { approved: true, note: 'Approved, photo checked.' },
    { by: 'mona' },
  );
  if (finished.status !== 'completed') throw new Error(`fx-refund-done ended ${finished.status}.`);
  m.portRequests.refundAnswered = { run: done.run, id: doneRequest.id, port: doneRequest.port };
  await recordRun('refundDone', done.run);

  const declined = await runner.start('refund', 'fx-refund-declined', 1044, { by: 'backend' });
  const declinedRequest = must(declined.requests[0], 'refund port request');
  await runner.respond(
    declined.run,
    declinedRequest.id,
    { approved: false, note: 'No photo.' },
    { by: 'mona' },
  );
  m.portRequests.refundDeclined = { run: declined.run, id: declinedRequest.id, port: declinedRequest.port };
  await recordRun('refundDeclined', declined.run);

  const lapsed = await hastyRunner.start('refund', 'fx-refund-expired', 1040, { by: 'backend' });
  const lapsedRequest = must(lapsed.requests[0], 'refund port request');
  while (Date.now() <= Date.parse(must(lapsedRequest.expiresAt, 'expiry')))
    await new Promise((r) => setTimeout(r, 2));
  const expiredPorts = await hastyRunner.expire();
  if (!expiredPorts.some((e) => e.requestId === lapsedRequest.id))
    throw new Error('The runner did not expire the hasty port request.');
  m.portRequests.refundExpired = { run: lapsed.run, id: lapsedRequest.id, port: lapsedRequest.port };
  await recordRun('refundExpired', lapsed.run);

  // The agent inside the support workflow: its approval waits as the run's request.
  const support = await runner.start(
    'support',
    'fx-support-waiting',
    { customer: 'c-100', message: 'Please cancel my order 1044.' },
    { by: 'desk' },
  );
  const supportRequest = must(support.requests[0], 'support port request');
  m.portRequests.supportWaiting = { run: support.run, id: supportRequest.id, port: supportRequest.port };
  const wrapped = (supportRequest.data as { approval: string; session: string }).approval;
  m.pendingRequests.supportWrapped = wrapped;
  m.sessions.push(must(await store.getApproval(wrapped), 'wrapped approval').session);
  await recordRun('supportWaiting', support.run);

  const verdict = await verifyAudit(store);
  if (!verdict.ok) throw new Error(`The fixture's own audit does not verify: ${verdict.problem}`);
  const entries = await store.listAudit();
  const byKind: Record<string, number> = {};
  for (const entry of entries) byKind[entry.kind] = (byKind[entry.kind] ?? 0) + 1;
  m.audit = { entries: verdict.entries, head: verdict.head, byKind };
  return m;
}

async function writeSqlite(): Promise<BackendManifest> {
  rmSync(SQLITE_FILE, { force: true });
  const store = await openStore(`sqlite:${SQLITE_FILE}`);
  const checkpoints = await openCheckpointStore(`sqlite:${SQLITE_FILE}`, { store: async () => store });
  const manifest = await populate(store, checkpoints);
  // Fold the WAL into the file, so the one checked-in file is the whole store.
  await (store as Store & { checkpoint(): Promise<void> }).checkpoint();
  await store.close();
  for (const suffix of ['-wal', '-shm']) {
    const side = `${SQLITE_FILE}${suffix}`;
    if (existsSync(side) && statSync(side).size > 0 && suffix === '-wal')
      throw new Error(`${side} still holds writes after the checkpoint.`);
    rmSync(side, { force: true });
  }
  return manifest;
}

async function writePostgres(): Promise<BackendManifest> {
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  const server = (await admin.query<{ v: string }>('SHOW server_version')).rows[0]?.v ?? '';
  await admin.query(`DROP SCHEMA IF EXISTS ${FIXTURE_SCHEMA} CASCADE`);
  await admin.end();
  const dumpVersion = execFileSync('pg_dump', ['--version'], { encoding: 'utf8' });
  if (!dumpVersion.includes(` ${server.split(' ')[0]}`))
    throw new Error(`pg_dump (${dumpVersion.trim()}) does not match the server (${server}).`);

  const spec = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${FIXTURE_SCHEMA}`;
  const store = await openStore(spec);
  const checkpoints = await openCheckpointStore(spec, { store: async () => store });
  const manifest = await populate(store, checkpoints);
  await store.close();

  // --column-inserts: plain INSERTs a pg client can replay (COPY FROM stdin needs psql).
  const dump = execFileSync(
    'pg_dump',
    [`--dbname=${PG_URL}`, `--schema=${FIXTURE_SCHEMA}`, '--no-owner', '--no-privileges', '--column-inserts'],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  writeFileSync(PG_DUMP_FILE, dump);
  const cleanup = new pg.Client({ connectionString: PG_URL });
  await cleanup.connect();
  await cleanup.query(`DROP SCHEMA IF EXISTS ${FIXTURE_SCHEMA} CASCADE`);
  await cleanup.end();
  return manifest;
}

async function main(): Promise<void> {
  const force = process.argv.includes('--force');
  if (!force && [SQLITE_FILE, PG_DUMP_FILE, MANIFEST_FILE].some((file) => existsSync(file))) {
    throw new Error(
      `${OUT_DIR} already holds fixtures written by an earlier version; they are never regenerated (pass --force only if you mean to replace what they pin).`,
    );
  }
  mkdirSync(OUT_DIR, { recursive: true });
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const sqlite = await writeSqlite();
  const postgres = await writePostgres();
  const manifest = {
    writtenBy: 'countersign 0.1.0',
    commit,
    writtenAt: new Date().toISOString(),
    postgresSchema: FIXTURE_SCHEMA,
    sqlite,
    postgres,
  };
  writeFileSync(MANIFEST_FILE, `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(
    `Wrote ${SQLITE_FILE} (${sqlite.audit.entries} audit entries), ${PG_DUMP_FILE} (${postgres.audit.entries}) and ${MANIFEST_FILE}.`,
  );
}

await main();
