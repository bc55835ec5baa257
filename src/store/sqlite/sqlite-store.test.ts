import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyAuditChain } from '../../core/audit.ts';
import type { PayloadCodec } from '../codec.ts';
import { jsonCodec } from '../codec.ts';
import { at, atMs, byPerson, event, leasedSession, raise, request, user } from '../conformance/fixtures.ts';
import { ALL_STORE_SUITES, describeStoreConformance } from '../conformance/store-conformance.ts';
import { encodeCursor, planPage } from '../request-page.ts';
import { requestPageSql } from '../sql/request-page-sql.ts';
import type { RequestPageQuery } from '../store.ts';
import { migrations } from './migrations.ts';
import { SQLITE_PAGE_DIALECT } from './page-requests.ts';
import { STALLED_SESSIONS_SQL } from './row-queries.ts';
import { runFixture } from './run-fixture.ts';
import {
  AUDIT_PAGE_SQL,
  AUDIT_SESSION_PAGE_SQL,
  createSqliteStore,
  SQLITE_STATS,
  type SqliteStore,
} from './sqlite-store.ts';

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'countersign-sqlite-'));
}

describeStoreConformance(
  {
    name: 'sqlite',
    create: async () => createSqliteStore({ path: join(await tempDir(), 'store.db') }),
    destroy: (store) => rm(dirname(store.path), { recursive: true, force: true }),
    sibling: async (store) => createSqliteStore({ path: store.path }),
  },
  { suites: ALL_STORE_SUITES },
);

describe('SQLite store', () => {
  let dir: string;
  let path: string;
  const opened: SqliteStore[] = [];

  function open(
    options: { codec?: PayloadCodec; busyTimeoutMs?: number; onCommit?: (writes: number) => void } = {},
  ): SqliteStore {
    const store = createSqliteStore({ path, ...options });
    opened.push(store);
    return store;
  }

  function raw<T>(work: (db: DatabaseSync) => T): T {
    const db = new DatabaseSync(path);
    try {
      return work(db);
    } finally {
      db.close();
    }
  }

  beforeEach(async () => {
    dir = await tempDir();
    path = join(dir, 'nested', 'deeper', 'store.db');
  });

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('creates the parent directories and the schema, in WAL mode', async () => {
    const store = open();
    expect(store.kind).toBe('sqlite');
    expect(store.path).toBe(path);
    expect((await stat(path)).isFile()).toBe(true);
    raw((db) => {
      expect(db.prepare('PRAGMA user_version').get()?.user_version).toBe(migrations.length);
      expect(db.prepare('PRAGMA journal_mode').get()?.journal_mode).toBe('wal');
      const tables = db
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .all()
        .map((row) => row.name);
      expect(tables).toEqual([
        'approvals',
        // The FTS5 text index (virtual) and its shadow tables.
        'approvals_search',
        'approvals_search_config',
        'approvals_search_data',
        'approvals_search_docsize',
        'approvals_search_idx',
        'audit',
        'data_keys',
        'deliveries',
        'executions',
        'messages',
        'rules',
        'sessions',
        'state',
        'web_sessions',
        'workflow_checkpoints',
        'workflow_runs',
      ]);
    });
  });

  it('keeps messages in a rowid table: WITHOUT ROWID would push bodies over ~1 KB to overflow pages', async () => {
    open();
    const schema = raw(
      (db) => db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'messages'").get()?.sql,
    );
    expect(schema).not.toMatch(/WITHOUT ROWID/);
  });

  it('reads the audit log by cursor as a range walk of the primary key, never the whole table', async () => {
    open();
    const plan = (text: string, ...values: Array<string | number>) =>
      raw((db) =>
        db
          .prepare(`EXPLAIN QUERY PLAN ${text}`)
          .all(...values)
          .map((row) => String(row.detail)),
      );
    // seq is the rowid: a SEARCH on it is a seek to afterSeq, in order, stopped by LIMIT.
    expect(plan(AUDIT_PAGE_SQL, 10, 100)).toEqual([
      expect.stringMatching(/^SEARCH audit USING INTEGER PRIMARY KEY \(rowid>\?\)/),
    ]);
    // The session index carries the rowid: a seek to (session, seq > afterSeq), no sort.
    const bySession = plan(AUDIT_SESSION_PAGE_SQL, 10, 's1', 100);
    expect(bySession).toEqual([
      expect.stringMatching(/^SEARCH audit USING INDEX audit_by_session \(session=\? AND rowid>\?\)/),
    ]);
  });

  it('pages requests by walking an index in the page order: no sort, no scan of the table', async () => {
    open();
    // The query with a cursor bound to its own filters and sort, as a page hands one out.
    const paged = (query: RequestPageQuery): RequestPageQuery => ({
      ...query,
      after: encodeCursor(
        request({ id: 'x', session: 's1', decision: byPerson('approved', 5) }),
        planPage(query),
      ),
    });
    const cases: Array<[RequestPageQuery, RegExp]> = [
      [{ limit: 50 }, /approvals_by_created/],
      [{ limit: 50, status: 'pending' }, /approvals_by_status \(status=\?\)/],
      [
        paged({ limit: 50, status: 'pending' }),
        /approvals_by_status \(status=\? AND \(created_at,id\)>\(\?,\?\)\)/,
      ],
      [
        paged({ limit: 50, status: 'pending', sort: 'newest' }),
        /approvals_by_status \(status=\? AND \(created_at,id\)<\(\?,\?\)\)/,
      ],
      [paged({ limit: 50, sort: 'expiring' }), /approvals_due \(\(expires_at,id\)>\(\?,\?\)\)/],
      [paged({ limit: 50, sort: 'decided' }), /approvals_decided \(.*\(decided_at,id\)<\(\?,\?\)\)/],
      [
        paged({ limit: 50, session: 's1' }),
        /approvals_by_session \(session=\? AND \(created_at,id\)>\(\?,\?\)\)/,
      ],
      [{ limit: 50, run: 'r-1', status: 'pending' }, /approvals_by_run \(run=\?\)/],
      [
        {
          limit: 50,
          status: 'pending',
          text: 'refund',
          tool: 'order',
          customer: 'c',
          role: 'manager',
          kind: 'tool-call',
        },
        /approvals_by_status \(status=\?\)/,
      ],
    ];
    for (const [query, index] of cases) {
      const { page, count } = requestPageSql(SQLITE_PAGE_DIALECT, planPage({ ...query, count: true }));
      for (const statement of [page, count]) {
        if (statement === null) continue;
        const plan = raw((db) =>
          db
            .prepare(`EXPLAIN QUERY PLAN ${statement.text}`)
            .all(...statement.values)
            .map((row) => String(row.detail)),
        ).join('\n');
        expect(plan, JSON.stringify(query)).not.toMatch(/TEMP B-TREE|SCAN approvals$/m);
        expect(plan, JSON.stringify(query)).toMatch(/USING (COVERING )?INDEX/);
        if (statement === page) expect(plan, JSON.stringify(query)).toMatch(index);
      }
    }
  });

  it('narrows a text page through the FTS5 trigram index: candidates by rowid, then a sort of those few', async () => {
    open();
    // The query with a cursor bound to its own filters and sort, as a page hands one out.
    const paged = (query: RequestPageQuery): RequestPageQuery => ({
      ...query,
      after: encodeCursor(
        request({ id: 'x', session: 's1', decision: byPerson('approved', 5) }),
        planPage(query),
      ),
    });
    const queries: RequestPageQuery[] = [
      { limit: 50, status: 'pending', text: 'customer c-7.' },
      paged({ limit: 50, text: 'customer c-7.', sort: 'newest' }),
      paged({ limit: 50, text: 'customer c-7.', sort: 'expiring' }),
      { limit: 50, text: 'customer c-7.', sort: 'decided', status: 'approved' },
      { limit: 50, customer: 'c-7', session: 's1', tool: 'refund' },
    ];
    for (const query of queries) {
      // What text-search.ts hands over for a rare trigram.
      const { page, count } = requestPageSql(
        SQLITE_PAGE_DIALECT,
        planPage({ ...query, count: true }),
        '"-7."',
      );
      for (const statement of [page, count]) {
        if (statement === null) continue;
        const plan = raw((db) =>
          db
            .prepare(`EXPLAIN QUERY PLAN ${statement.text}`)
            .all(...statement.values)
            .map((row) => String(row.detail)),
        );
        const shown = `${JSON.stringify(query)}\n${plan.join('\n')}`;
        expect(plan, shown).toContain('SEARCH approvals USING INTEGER PRIMARY KEY (rowid=?)');
        expect(plan, shown).toContainEqual(
          expect.stringMatching(/^SCAN approvals_search VIRTUAL TABLE INDEX/),
        );
        // The sort is of the candidates' keys only (at most NARROWING_CAP rows), then the
        // page's rows are read by rowid; no ordered index is walked.
        expect(plan.join('\n'), shown).not.toMatch(/SCAN approvals$|USING (COVERING )?INDEX/m);
      }
    }
  });

  it('counts decision stats from a range of the covering index of decided rows, never the waiting ones', async () => {
    open();
    for (const [name, text] of Object.entries(SQLITE_STATS)) {
      const plan = raw((db) =>
        db
          .prepare(`EXPLAIN QUERY PLAN ${text}`)
          .all(at(0), at(100))
          .map((row) => String(row.detail)),
      ).join('\n');
      // The reasons read the decision payload from the table, for at most 500 rows.
      const index =
        name === 'reasons'
          ? /USING INDEX approvals_decided/
          : /USING COVERING INDEX approvals_decided \(decided_at>\? AND decided_at<\?\)/;
      expect(plan, name).toMatch(index);
      expect(plan, name).not.toMatch(/SCAN approvals/);
    }
  });

  it('finds stalled sessions by walking the partial index of open batches, never the whole table', async () => {
    open();
    const plan = raw((db) =>
      db
        .prepare(`EXPLAIN QUERY PLAN ${STALLED_SESSIONS_SQL}`)
        .all(0, 0, null, 50)
        .map((row) => String(row.detail)),
    );
    // A SCAN of the partial index is proportional to sessions with an open batch, and its
    // order is the query's, so there is no sort and LIMIT stops the walk.
    expect(plan).toContain('SCAN s USING INDEX sessions_continue_due');
    expect(plan.join('\n')).not.toMatch(/TEMP B-TREE|SCAN (a|e)\b|SCAN s$/m);
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH a USING INDEX approvals_by_session/));
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH e USING COVERING INDEX executions_unknown/));
  });

  it('the paging migration fills the decided columns from JSON decisions and flags the sessions due', async () => {
    await mkdir(dirname(path), { recursive: true });
    const paging = migrations.findIndex((text) => text.includes('decided_at TEXT'));
    expect(paging).toBeGreaterThan(0);
    raw((db) => {
      for (const text of migrations.slice(0, paging)) db.exec(text);
      db.exec(`PRAGMA user_version = ${paging}`);
      const session = db.prepare(
        "INSERT INTO sessions (id, agent, principal, created_at, updated_at, batch) VALUES (?, 'bookstore', 'c-1', ?, ?, ?)",
      );
      session.run('due', at(0), at(0), '{"messageSeq":0,"calls":[]}');
      session.run('waiting', at(0), at(0), '{"messageSeq":0,"calls":[]}');
      session.run('done', at(0), at(0), null);
      const approval = db.prepare(
        `INSERT INTO approvals (id, session, agent, call_id, tool, args_json, args_hash, effect, created_at, expires_at, status, decision)
         VALUES (?, ?, 'bookstore', ?, 'refund', '{}', ?, 'Refund.', ?, ?, ?, ?)`,
      );
      const hash = '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a';
      approval.run(
        'r-due',
        'due',
        'c1',
        hash,
        at(1),
        at(100),
        'approved',
        JSON.stringify(byPerson('approved', 5, 'mia')),
      );
      approval.run('r-wait', 'waiting', 'c2', hash, at(2), at(100), 'pending', null);
      approval.run(
        'r-done',
        'done',
        'c3',
        hash,
        at(3),
        at(100),
        'rejected',
        JSON.stringify(byPerson('rejected', 7)),
      );
    });
    const store = open();
    const history = await store.pageRequests({ limit: 10, sort: 'decided' });
    expect(history.items.map((row) => row.id)).toEqual(['r-done', 'r-due']);
    expect(
      (await store.decisionStats({ since: at(0), until: at(10) })).approvers.map((row) => row.approver),
    ).toEqual(['alice', 'mia']);
    expect((await store.listStalledSessions({ nowMs: atMs(500) })).map((row) => row.id)).toEqual(['due']);
    // The flag follows the session from here on: deciding the waiting one makes it due.
    await store.decide('r-wait', byPerson('approved', 8));
    expect((await store.listStalledSessions({ nowMs: atMs(500) })).map((row) => row.id)).toEqual([
      'due',
      'waiting',
    ]);
  });

  it('upgrades a file made by the first schema, keeping its data and adding rules', async () => {
    await mkdir(dirname(path), { recursive: true });
    raw((db) => {
      db.exec(migrations[0] ?? '');
      db.exec('PRAGMA user_version = 1');
      db.prepare(
        "INSERT INTO sessions (id, agent, principal, created_at, updated_at) VALUES ('s1', 'bookstore', 'alice', ?, ?)",
      ).run(at(0), at(0));
    });
    const store = open();
    expect(raw((db) => db.prepare('PRAGMA user_version').get()?.user_version)).toBe(migrations.length);
    expect((await store.getSession('s1'))?.agent).toBe('bookstore');
    await store.acquireLease({ session: 's1', owner: 'run-1', untilMs: atMs(1000), nowMs: atMs(0) });
    await raise(store, 's1', [request({ id: 'r1', session: 's1' })]);
    const granted = {
      id: 'rule-1',
      session: 's1',
      tool: 'place_order',
      toolIdentity: 'place_order:3f1c9a',
      argsHash: null,
      sourceRequest: 'r1',
      createdAt: at(20),
      createdBy: 'alice',
      revokedAt: null,
      revokedBy: null,
    };
    expect((await store.decide('r1', byPerson('approved', 20), [], { rule: granted })).won).toBe(true);
    expect(await store.listRules({ session: 's1' })).toEqual([granted]);
  });

  it('concurrent writes from different sessions share one durable transaction', async () => {
    const commits: number[] = [];
    const store = open({ onCommit: (writes) => commits.push(writes) });
    await Promise.all([leasedSession(store, 's1'), leasedSession(store, 's2'), leasedSession(store, 's3')]);
    commits.length = 0;
    const [one, two, refused] = await Promise.all([
      store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [user('a')],
        at: at(1),
      }),
      store.commitStep({
        session: 's2',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [user('b')],
        at: at(1),
      }),
      // A step that is refused fails alone; the other two still commit.
      store
        .commitStep({
          session: 's3',
          leaseOwner: 'intruder',
          expectedMessageCount: 0,
          append: [user('c')],
          at: at(1),
        })
        .catch((error: { code: string }) => error.code),
    ]);
    expect(commits).toEqual([3]);
    expect(refused).toBe('SESSION_BUSY');
    expect([one.messageCount, two.messageCount]).toEqual([1, 1]);
    expect(raw((db) => db.prepare('SELECT session FROM messages ORDER BY session').all())).toEqual([
      { session: 's1' },
      { session: 's2' },
    ]);
  });

  it('keeps everything across close and reopen', async () => {
    const first = open();
    await leasedSession(first, 's1');
    await first.commitStep({
      session: 's1',
      leaseOwner: 'run-1',
      expectedMessageCount: 0,
      append: [user('hello')],
      audit: [event('request.raised', 's1')],
      at: at(1),
    });
    await raise(first, 's1', [request({ id: 'r1', session: 's1' })]);
    await first.decide('r1', byPerson('approved', 20));
    await first.setState('bookstore', 'orders', ['o-1']);
    const before = {
      snapshot: await first.exportSession('s1'),
      audit: await first.listAudit(),
      lease: await first.getLease('s1'),
    };
    await first.close();

    const second = open();
    expect(await second.exportSession('s1')).toEqual(before.snapshot);
    expect(await second.listAudit()).toEqual(before.audit);
    expect(await second.getLease('s1')).toEqual(before.lease);
    expect(await second.getState('bookstore', 'orders')).toEqual(['o-1']);
    expect(raw((db) => db.prepare('PRAGMA user_version').get()?.user_version)).toBe(migrations.length);
  });

  it('stores the arguments once, as the exact canonical text', async () => {
    const store = open();
    await leasedSession(store, 's1');
    const r1 = request({ id: 'r1', session: 's1', args: { z: 1, a: ['x', { c: true, b: null }] } });
    await raise(store, 's1', [r1]);
    const columns = raw((db) => db.prepare('SELECT name FROM pragma_table_info(?)').all('approvals')).map(
      (row) => row.name,
    );
    expect(columns).not.toContain('args');
    expect(raw((db) => db.prepare('SELECT args_json FROM approvals').get()?.args_json)).toBe(r1.argsJson);
  });

  it('passes every stored payload through the codec', async () => {
    const marked: PayloadCodec = {
      name: 'marked',
      encode: (value) => `enc:${Buffer.from(jsonCodec.encode(value)).toString('base64')}`,
      decode: (text, where) => {
        if (!text.startsWith('enc:')) throw new Error(`unmarked payload at ${where}`);
        return jsonCodec.decode(Buffer.from(text.slice(4), 'base64').toString('utf8'), where);
      },
    };
    const store = open({ codec: marked });
    await leasedSession(store, 's1');
    await store.commitStep({
      session: 's1',
      leaseOwner: 'run-1',
      expectedMessageCount: 0,
      append: [user('secret')],
      batch: { messageSeq: 0, calls: [] },
      audit: [event('request.raised', 's1')],
      at: at(1),
    });
    await raise(store, 's1', [request({ id: 'r1', session: 's1' })]);
    await store.decide('r1', byPerson('approved', 20));
    await store.startExecution({
      requestId: 'r1',
      session: 's1',
      callId: 'c',
      tool: 't',
      args: { secret: 1 },
      idempotencyKey: 'k',
      at: at(21),
    });
    await store.finishExecution('r1', { status: 'succeeded', result: 'secret result', at: at(22) });
    await store.setState('ns', 'k', 'secret state');

    const payloads = raw((db) =>
      [
        'SELECT body AS v FROM messages',
        'SELECT batch AS v FROM sessions',
        'SELECT args_json AS v FROM approvals',
        'SELECT decision AS v FROM approvals',
        'SELECT args AS v FROM executions',
        'SELECT result AS v FROM executions',
        'SELECT data AS v FROM audit',
        'SELECT value AS v FROM state',
      ].flatMap((query) =>
        db
          .prepare(query)
          .all()
          .map((row) => row.v),
      ),
    );
    expect(payloads.length).toBeGreaterThanOrEqual(8);
    for (const payload of payloads) expect(payload).toMatch(/^enc:/);
    expect((await store.loadMessages('s1'))[0]?.message).toEqual(user('secret'));
    expect((await store.getExecution('r1'))?.result).toBe('secret result');
    expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
  });

  it('reports a damaged message body as CORRUPT_DATA naming the row', async () => {
    const store = open();
    await leasedSession(store, 's1');
    await store.commitStep({
      session: 's1',
      leaseOwner: 'run-1',
      expectedMessageCount: 0,
      append: [user('a'), user('b')],
      at: at(1),
    });
    raw((db) => db.prepare("UPDATE messages SET body = '{not json' WHERE session = 's1' AND seq = 1").run());
    const load = store.loadMessages('s1');
    await expect(load).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
    await expect(load).rejects.toThrow('messages(session=s1, seq=1)');
  });

  it('reports an impossible status as CORRUPT_DATA naming the row', async () => {
    const store = open();
    await leasedSession(store, 's1');
    await raise(store, 's1', [request({ id: 'r1', session: 's1' })]);
    raw((db) => db.prepare("UPDATE approvals SET status = 'maybe' WHERE id = 'r1'").run());
    const read = store.getApproval('r1');
    await expect(read).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
    await expect(read).rejects.toThrow('approvals(id=r1)');
  });

  it('reports an outbox row with an impossible status as CORRUPT_DATA naming the row', async () => {
    const store = open();
    const delivery = { id: 'evt_1', kind: 'approval.requested', payload: {}, createdAt: at(1), nextAtMs: 0 };
    await store.enqueueDelivery(delivery);
    raw((db) => db.prepare("UPDATE deliveries SET status = 'sent' WHERE id = 'evt_1'").run());
    const read = store.getDelivery('evt_1');
    await expect(read).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
    await expect(read).rejects.toThrow('deliveries(id=evt_1)');
  });

  it('an audit row edited in the file breaks the chain at that entry', async () => {
    const store = open();
    await store.appendAudit(
      [event('request.raised', 's1'), event('request.decided', 's1'), event('execution.started', 's1')],
      at(1),
    );
    expect(verifyAuditChain(await store.listAudit())).toMatchObject({ ok: true, entries: 3 });
    raw((db) => db.prepare("UPDATE audit SET actor = 'mallory' WHERE seq = 2").run());
    expect(verifyAuditChain(await store.listAudit())).toMatchObject({ ok: false, brokenAt: 2 });
  });

  it('an audit row deleted from the file breaks the chain after the gap', async () => {
    const store = open();
    await store.appendAudit([event('request.raised', 's1'), event('request.decided', 's1')], at(1));
    await store.appendAudit([event('execution.started', 's1')], at(2));
    raw((db) => db.prepare('DELETE FROM audit WHERE seq = 2').run());
    expect(verifyAuditChain(await store.listAudit())).toMatchObject({ ok: false, brokenAt: 3 });
  });

  it('a directory in place of the file is STORE_UNAVAILABLE', async () => {
    const attempt = () => createSqliteStore({ path: dir });
    expect(attempt).toThrow(expect.objectContaining({ code: 'STORE_UNAVAILABLE' }));
    expect(attempt).toThrow(/COUNTERSIGN_STORE/);
  });

  it('a file that is not a database is STORE_UNAVAILABLE', async () => {
    const bogus = join(dir, 'notes.txt');
    await writeFile(bogus, 'these are my notes, not a database\n'.repeat(200));
    expect(() => createSqliteStore({ path: bogus })).toThrow(
      expect.objectContaining({ code: 'STORE_UNAVAILABLE' }),
    );
  });

  it('a file from a newer countersign is refused', async () => {
    open();
    raw((db) => db.exec(`PRAGMA user_version = ${migrations.length + 1}`));
    expect(() => open()).toThrow(expect.objectContaining({ code: 'STORE_UNAVAILABLE' }));
  });

  it('a write lock held past the busy timeout is STORE_UNAVAILABLE with a hint', async () => {
    const store = open({ busyTimeoutMs: 50 });
    const holder = new DatabaseSync(path);
    holder.exec('BEGIN IMMEDIATE');
    try {
      const write = store.setState('ns', 'k', 1);
      await expect(write).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      await expect(write).rejects.toThrow(/try again/);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    await store.setState('ns', 'k', 2);
    expect(await store.getState('ns', 'k')).toBe(2);
  });

  it('a closed store says so', async () => {
    const store = open();
    await store.close();
    await expect(store.getSession('s1')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await expect(store.close()).resolves.toBeUndefined();
  });

  it('checkpoint folds the WAL into the database file', async () => {
    const store = open();
    await store.setState('ns', 'k', 'x'.repeat(10_000));
    expect((await stat(`${path}-wal`)).size).toBeGreaterThan(0);
    await store.checkpoint();
    expect((await stat(`${path}-wal`)).size).toBe(0);
    expect(await store.getState('ns', 'k')).toHaveLength(10_000);
  });

  it('two stores on one file: exactly one decision wins', async () => {
    const a = open();
    const b = open();
    await leasedSession(a, 's1');
    await raise(a, 's1', [request({ id: 'r1', session: 's1' })]);
    const results = await Promise.all([
      a.decide('r1', byPerson('approved', 20, 'alice'), [event('request.decided', 's1', 'r1')]),
      b.decide('r1', byPerson('rejected', 20, 'bob'), [event('request.decided', 's1', 'r1')]),
    ]);
    expect(results.filter((result) => result.won)).toHaveLength(1);
    const loser = results.find((result) => !result.won);
    const winner = results.find((result) => result.won);
    expect(loser?.request?.decision).toEqual(winner?.request?.decision);
    expect(await b.listAudit()).toHaveLength(1);
  });

  it('four processes racing to decide one request: exactly one wins', async () => {
    const store = open();
    await leasedSession(store, 's1');
    await raise(store, 's1', [request({ id: 'r1', session: 's1', expiresAt: '2999-01-01T00:00:00.000Z' })]);
    const startAt = String(Date.now() + 1500);
    const outputs = await Promise.all(
      ['p1', 'p2', 'p3', 'p4'].map((by) =>
        runFixture('decide-race.fixture.ts', [path, 's1', 'r1', by, startAt]),
      ),
    );
    const results = outputs.map((output) => JSON.parse(output) as { won: boolean; decidedBy: string | null });
    expect(results.filter((result) => result.won)).toHaveLength(1);
    const winner = (await store.getApproval('r1'))?.decision?.by;
    expect(['p1', 'p2', 'p3', 'p4']).toContain(winner);
    for (const result of results) expect(result.decidedBy).toBe(winner);
    const audit = await store.listAudit();
    expect(audit.map((entry) => entry.actor)).toEqual([winner]);
    expect(verifyAuditChain(audit).ok).toBe(true);
  });

  it('four processes creating the same new file at once all succeed', async () => {
    const startAt = String(Date.now() + 1500);
    const names = ['p1', 'p2', 'p3', 'p4'];
    const outputs = await Promise.all(
      names.map((name) => runFixture('open-race.fixture.ts', [path, name, startAt])),
    );
    expect(outputs).toEqual(['ok', 'ok', 'ok', 'ok']);
    const store = open();
    for (const name of names) expect(await store.getState('open-race', name)).toBe(true);
    expect(raw((db) => db.prepare('PRAGMA user_version').get()?.user_version)).toBe(migrations.length);
  });
});
