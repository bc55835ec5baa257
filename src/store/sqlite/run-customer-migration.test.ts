import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, expect, it } from 'vitest';
import { bindArgs } from '../../core/canonical-json.ts';
import { checkpoint } from '../conformance/checkpoint-store-conformance.ts';
import { at } from '../conformance/fixtures.ts';
import { migrations } from './migrations.ts';
import { createSqliteStore, type SqliteStore } from './sqlite-store.ts';

/**
 * Migration 15 gives runs a clear `customer`: filled in from what SQL can read (a plain JSON
 * body's origin, else the customer of a request the run raised); a sealed body with no such
 * request stays NULL until the run's next checkpoint names its customer.
 */
const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const body = (customer: unknown) =>
  JSON.stringify({ format: 1, contract: { nodes: {} }, state: { origin: { by: 'desk', customer } } });
/** What the encrypting codec writes: no SQL function reads inside it. */
const SEALED = 'cs1:dk_1:bm90IGZvciB5b3VyIGV5ZXM';

it('SQLite migration 15: existing runs get their customer where SQL can read it; a sealed one on its next checkpoint', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-run-customer-'));
  dirs.push(dir);
  const path = join(dir, 'store.db');
  const db = new DatabaseSync(path);
  for (const migration of migrations.slice(0, 14)) db.exec(migration);
  db.exec('PRAGMA user_version = 14');
  const run = (id: string, text: string) => {
    db.prepare(
      `INSERT INTO workflow_runs (id, workflow, version, status, latest, latest_seq, created_at, updated_at)
       VALUES (?, 'refund', 1, 'awaiting_input', ?, 0, ?, ?)`,
    ).run(id, `cp-${id}-0`, at(1), at(1));
    db.prepare(
      `INSERT INTO workflow_checkpoints (id, run, seq, parent, superstep, created_at, workflow, version, status, body)
       VALUES (?, ?, 0, NULL, 0, ?, 'refund', 1, 'awaiting_input', ?)`,
    ).run(`cp-${id}-0`, id, at(1), text);
  };
  run('r-plain', body('c-100'));
  run('r-nobody', body(null));
  run('r-odd', body(42));
  run('r-sealed', SEALED);
  run('r-sealed-alone', SEALED);
  const args = bindArgs({ orderId: 1040 });
  db.prepare(
    `INSERT INTO approvals (id, session, agent, call_id, tool, args_json, args_hash, effect, created_at, expires_at,
       status, kind, run, customer)
     VALUES ('req_1', 'wf.r-sealed', 'refund', 'manager-approval', 'manager-approval', ?, ?, 'Refund.', ?, ?,
       'pending', 'port', 'r-sealed', 'c-300')`,
  ).run(args.argsJson, args.argsHash, at(1), at(100));
  db.close();

  const store = createSqliteStore({ path });
  stores.push(store);
  const customers = Object.fromEntries(
    (await store.listRuns()).map((summary) => [summary.run, summary.customer]),
  );
  expect(customers).toEqual({
    'r-plain': 'c-100',
    'r-nobody': null,
    'r-odd': null,
    'r-sealed': 'c-300',
    'r-sealed-alone': null,
  });
  expect((await store.pageRuns({ limit: 5, customer: 'c-300' })).items.map((row) => row.run)).toEqual([
    'r-sealed',
  ]);
  // Its next checkpoint names the customer (the runner always does): filled in, once.
  const next = checkpoint('r-sealed-alone', 1, { createdAt: at(2), customer: 'c-400' });
  expect((await store.saveCheckpoint(next, 'cp-r-sealed-alone-0')).saved).toBe(true);
  const after = checkpoint('r-sealed-alone', 2, { createdAt: at(3), customer: 'c-666' });
  expect((await store.saveCheckpoint(after, 'cp-r-sealed-alone-1')).saved).toBe(true);
  expect((await store.pageRuns({ limit: 5, customer: 'c-400' })).items.map((row) => row.run)).toEqual([
    'r-sealed-alone',
  ]);
  expect(await store.erasePrincipal({ principal: 'c-400', at: at(9) })).toMatchObject({ runs: 1 });
  expect((await store.listRuns()).map((row) => row.run)).not.toContain('r-sealed-alone');
});
