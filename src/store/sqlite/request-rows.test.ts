import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  badLegacyTimes,
  expectAdoptionRefused,
  legacyDone,
  legacyWaiting,
} from '../../../test/helpers/legacy-bad-times.ts';
import { bindArgs } from '../../core/canonical-json.ts';
import { at, leasedSession, raise, request } from '../conformance/fixtures.ts';
import { migrations } from './migrations.ts';
import { DUE_WORK_SQL, NUDGES_DUE_SQL } from './sqlite-request-timers.ts';
import { createSqliteStore, DUE_REQUESTS_SQL, type SqliteStore } from './sqlite-store.ts';

describe('SQLite request rows (migration 9)', () => {
  let dir: string;
  let path: string;
  const opened: SqliteStore[] = [];
  const open = () => {
    const store = createSqliteStore({ path });
    opened.push(store);
    return store;
  };
  const raw = <T>(work: (db: DatabaseSync) => T): T => {
    const db = new DatabaseSync(path);
    try {
      return work(db);
    } finally {
      db.close();
    }
  };

  /**
   * A file at schema 8 (before requests were rows) holding run `r`: one checkpoint per body,
   * oldest first, the last the run's latest, and the answers `workflow_answers` recorded.
   */
  const legacyFile = (
    bodies: readonly unknown[],
    answers: ReadonlyArray<{ requestId: string; at: string }>,
  ) =>
    raw((db) => {
      for (const migration of migrations.slice(0, 8)) db.exec(migration);
      db.exec('PRAGMA user_version = 8');
      const latest = bodies.length - 1;
      db.prepare(
        `INSERT INTO workflow_runs (id, workflow, version, status, latest, latest_seq, created_at, updated_at)
         VALUES ('r', 'refund', 1, 'awaiting_input', ?, ?, ?, ?)`,
      ).run(`cp-${latest}`, latest, at(1), at(1));
      bodies.forEach((body, seq) => {
        db.prepare(
          `INSERT INTO workflow_checkpoints (id, run, seq, parent, superstep, created_at, workflow, version, status, body)
           VALUES (?, 'r', ?, ?, ?, ?, 'refund', 1, 'awaiting_input', ?)`,
        ).run(`cp-${seq}`, seq, seq === 0 ? null : `cp-${seq - 1}`, seq + 1, at(1), JSON.stringify(body));
      });
      for (const answer of answers)
        db.prepare(
          `INSERT INTO workflow_answers (run, request_id, response, answered_by, answered_at, expired)
           VALUES ('r', ?, '{"approved":true}', 'mona', ?, 0)`,
        ).run(answer.requestId, answer.at);
    });
  const waitingOn = (requests: readonly object[]) => ({
    format: 1,
    contract: { nodes: {} },
    state: { messages: [], requests, origin: { by: 'desk', customer: 'c-100' } },
  });
  const answersLeft = () =>
    raw((db) => {
      const table = db
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name = 'workflow_answers'")
        .get();
      return table === undefined ? null : db.prepare('SELECT request_id FROM workflow_answers').all().length;
    });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'countersign-request-rows-'));
    path = join(dir, 'store.db');
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the nudge sweep walks the partial index of pending rows by next nudge: no scan, no sort', async () => {
    const store = open();
    await leasedSession(store, 's1');
    await raise(store, 's1', [request({ id: 'r1', session: 's1' })]);
    const plan = raw((db) =>
      db
        .prepare(`EXPLAIN QUERY PLAN ${NUDGES_DUE_SQL}`)
        .all(at(100), 50)
        .map((row) => String(row.detail)),
    );
    expect(plan).toEqual([
      expect.stringMatching(
        /^SEARCH approvals USING INDEX approvals_nudge_due \(next_nudge_at>\? AND next_nudge_at<\?\)$/,
      ),
    ]);
  });

  it("the watcher's one question reads the first entry of each due index: no table scan, no sort", async () => {
    const store = open();
    await leasedSession(store, 's1');
    await raise(store, 's1', [request({ id: 'r1', session: 's1' })]);
    const plan = raw((db) =>
      db
        .prepare(`EXPLAIN QUERY PLAN ${DUE_WORK_SQL}`)
        .all()
        .map((row) => String(row.detail)),
    ).join('\n');
    // Each walks its partial index in order and stops at the first entry (LIMIT 1, EXISTS):
    // SQLite calls an ordered walk of an index a SCAN; of the table, a SCAN with no index.
    expect(plan).toMatch(/approvals USING COVERING INDEX approvals_due\b/);
    expect(plan).toMatch(/approvals USING COVERING INDEX approvals_nudge_due\b/);
    expect(plan).toMatch(/sessions USING (COVERING )?INDEX sessions_continue_due\b/);
    expect(plan).not.toMatch(/SCAN (approvals|sessions)$|TEMP B-TREE/m);
  });

  it('the expiry sweep walks the partial index of pending rows by expiry: no scan, no sort', async () => {
    const store = open();
    await leasedSession(store, 's1');
    await raise(store, 's1', [request({ id: 'r1', session: 's1' })]);
    const plan = raw((db) =>
      db
        .prepare(`EXPLAIN QUERY PLAN ${DUE_REQUESTS_SQL}`)
        .all(at(100), 50)
        .map((row) => String(row.detail)),
    );
    expect(plan).toEqual([
      expect.stringMatching(/^SEARCH approvals USING INDEX approvals_due \(expires_at<\?\)/),
    ]);
    const byRun = raw((db) =>
      db
        .prepare('EXPLAIN QUERY PLAN SELECT id FROM approvals WHERE run = ? AND run IS NOT NULL')
        .all('r')
        .map((row) => String(row.detail)),
    );
    expect(byRun.join('\n')).toMatch(/approvals_by_run/);
  });

  it('a file written at schema 8 migrates: tool calls get their customer, pending port requests and recorded answers become rows', async () => {
    const pendingData = { orderId: 1040, amount: 35, reason: 'Damaged cover' };
    const answeredData = { orderId: 1043, amount: 12, reason: 'Lost' };
    const body = {
      format: 1,
      contract: { nodes: {} },
      state: {
        messages: [],
        requests: [
          {
            id: 'req_wait',
            port: 'manager-approval',
            data: pendingData,
            createdAt: at(1),
            askedBy: null,
            expiresAt: at(500),
          },
          { id: 'req_done', port: 'manager-approval', data: answeredData, createdAt: at(1), askedBy: null },
        ],
        fanIn: {},
        executors: {},
        outputs: [],
        origin: { by: 'desk', customer: 'c-100' },
      },
    };
    raw((db) => {
      for (const migration of migrations.slice(0, 8)) db.exec(migration);
      db.exec('PRAGMA user_version = 8');
      db.prepare(
        "INSERT INTO sessions (id, agent, principal, created_at, updated_at) VALUES ('s1', 'bookstore', 'alice', ?, ?)",
      ).run(at(0), at(0));
      const args = bindArgs({ isbn: '978-0' });
      db.prepare(
        `INSERT INTO approvals (id, session, agent, call_id, tool, args_json, args_hash, effect, created_at, expires_at, status, decision, raised_by)
         VALUES ('apr_1', 's1', 'bookstore', 'c1', 'place_order', ?, ?, 'Orders it.', ?, ?, 'pending', NULL, 'web')`,
      ).run(args.argsJson, args.argsHash, at(1), at(100));
      db.prepare(
        `INSERT INTO workflow_runs (id, workflow, version, status, latest, latest_seq, created_at, updated_at)
         VALUES ('r', 'refund', 1, 'awaiting_input', 'cp-1', 0, ?, ?)`,
      ).run(at(1), at(1));
      db.prepare(
        `INSERT INTO workflow_checkpoints (id, run, seq, parent, superstep, created_at, workflow, version, status, body)
         VALUES ('cp-1', 'r', 0, NULL, 1, ?, 'refund', 1, 'awaiting_input', ?)`,
      ).run(at(1), JSON.stringify(body));
      db.prepare(
        `INSERT INTO workflow_answers (run, request_id, response, answered_by, answered_at, expired)
         VALUES ('r', 'req_done', ?, 'mona', ?, 0)`,
      ).run(JSON.stringify({ approved: true, note: 'ok' }), at(2));
    });
    const store = open();
    expect(raw((db) => db.prepare('PRAGMA user_version').get()?.user_version)).toBe(migrations.length);
    expect(await store.getApproval('apr_1')).toMatchObject({
      kind: 'tool-call',
      run: null,
      customer: 'alice',
      raisedBy: 'web',
      status: 'pending',
    });
    expect(await store.getApproval('req_wait')).toMatchObject({
      kind: 'port',
      session: 'wf.r',
      run: 'r',
      tool: 'manager-approval',
      args: pendingData,
      argsHash: bindArgs(pendingData).argsHash,
      expiresAt: at(500),
      raisedBy: 'desk',
      customer: 'c-100',
      status: 'pending',
    });
    expect(await store.getApproval('req_done')).toMatchObject({
      status: 'answered',
      expiresAt: '9999-12-31T23:59:59.999Z',
      decision: { verdict: 'answered', by: 'mona', at: at(2), response: { approved: true, note: 'ok' } },
    });
    const tables = raw((db) =>
      db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name = 'workflow_answers'").all(),
    );
    expect(tables).toEqual([]);
    // The pending one is decidable once, like any row; opening again adopts nothing twice.
    expect(
      (
        await store.decide('req_wait', {
          verdict: 'answered',
          response: 1,
          by: 'mia',
          reason: null,
          at: at(3),
          kind: 'person',
        })
      ).won,
    ).toBe(true);
    await store.close();
    opened.splice(0);
    expect((await open().listApprovals()).map((row) => row.id).sort()).toEqual([
      'apr_1',
      'req_done',
      'req_wait',
    ]);
  });
  it('adopting legacy requests rewrites a time with an explicit zone to the stored UTC form, and judges only the rows it adopts', async () => {
    legacyFile(
      [
        waitingOn([
          // Answered and applied already: adopted from this earlier checkpoint for its answer.
          {
            id: 'req_done',
            port: 'manager-approval',
            data: { amount: 12 },
            createdAt: '2030-01-01T00:00:01Z',
          },
          // Unanswered in an earlier checkpoint: not adopted, so its time is never read.
          { id: 'req_gone', port: 'manager-approval', data: { amount: 1 }, createdAt: 'yesterday' },
        ]),
        waitingOn([
          {
            id: 'req_wait',
            port: 'manager-approval',
            data: { amount: 35 },
            createdAt: '2030-01-01T02:00:01+02:00',
            expiresAt: '+002030-01-01T00:08:20Z',
          },
        ]),
      ],
      [{ requestId: 'req_done', at: '2030-01-01T01:00:02.000+01:00' }],
    );
    const store = open();
    expect(await store.getApproval('req_wait')).toMatchObject({
      status: 'pending',
      createdAt: at(1),
      expiresAt: at(500),
    });
    expect(await store.getApproval('req_done')).toMatchObject({
      status: 'answered',
      createdAt: at(1),
      expiresAt: '9999-12-31T23:59:59.999Z',
      decision: { verdict: 'answered', by: 'mona', at: at(2) },
    });
    expect(await store.getApproval('req_gone')).toBeNull();
    expect(answersLeft()).toBeNull();
    // Stored in the one form, the adopted request is due at its expiry like any other.
    expect((await store.listDue({ at: at(500), limit: 10 })).map((row) => row.id)).toEqual(['req_wait']);
  });

  it('adopting legacy requests refuses a time it cannot read without guessing (CORRUPT_DATA naming the row), changing nothing until it is corrected', async () => {
    for (const [i, bad] of badLegacyTimes.entries()) {
      const { edit, answeredAt } = bad;
      path = join(dir, `case-${i}.db`);
      legacyFile(
        [waitingOn([{ ...legacyWaiting, ...edit }, legacyDone])],
        [{ requestId: 'req_done', at: answeredAt ?? at(2) }],
      );
      let refused: unknown;
      try {
        open();
      } catch (error) {
        refused = error;
      }
      expectAdoptionRefused(refused, bad);
      expect(answersLeft()).toBe(1);
      expect(raw((db) => db.prepare('SELECT id FROM approvals').all())).toEqual([]);
    }
    // Corrected, the next open adopts it.
    raw((db) =>
      db
        .prepare("UPDATE workflow_answers SET answered_at = ? WHERE request_id = 'req_done'")
        .run('2030-01-01T00:00:02Z'),
    );
    const store = open();
    expect(await store.getApproval('req_done')).toMatchObject({ decision: { at: at(2) } });
    expect(await store.getApproval('req_wait')).toMatchObject({ status: 'pending', createdAt: at(1) });
    expect(answersLeft()).toBeNull();
  });
});
