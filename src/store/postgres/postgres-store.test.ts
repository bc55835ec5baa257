import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  TEST_PG_URL,
  withAdmin,
  withApplicationName,
} from '../../../test/helpers/postgres.ts';
import { verifyAuditChain } from '../../core/audit.ts';
import { auditGaps, indexAudit } from '../../core/audit-coverage.ts';
import type { PayloadCodec } from '../codec.ts';
import { jsonCodec } from '../codec.ts';
import { at, atMs, byPerson, event, leasedSession, raise, request, user } from '../conformance/fixtures.ts';
import { ALL_STORE_SUITES, describeStoreConformance } from '../conformance/store-conformance.ts';
import { encodeCursor, planPage } from '../request-page.ts';
import { dueWorkSql } from '../sql/due-work.ts';
import { requestPageSql } from '../sql/request-page-sql.ts';
import type { RequestPageQuery } from '../store.ts';
import { withRetries } from './connection.ts';
import { loadMigrations } from './migrate.ts';
import { postgresPageDialect } from './page-requests.ts';
import { nudgesDueSql } from './postgres-request-timers.ts';
import {
  createPostgresStore,
  dueRequestsSql,
  type PostgresStore,
  type PostgresStoreOptions,
  postgresStatsSql,
} from './postgres-store.ts';
import { auditPageText, stalledSessionsText } from './row-queries.ts';
import { tablesIn } from './schema-name.ts';

const url = await postgresForTests();

/** Runs race.fixture.ts in its own Node process; resolves with its parsed JSON output. */
function race(args: readonly string[]): Promise<Record<string, unknown>> {
  const script = fileURLToPath(new URL('race.fixture.ts', import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [script, ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`race.fixture.ts ${args[0]} failed: ${stderr || error.message}`));
      else resolve(JSON.parse(stdout) as Record<string, unknown>);
    });
  });
}

const startSoon = () => String(Date.now() + 1500);

describe.skipIf(url === null)('PostgreSQL store', () => {
  const connectionString = url ?? TEST_PG_URL;

  describeStoreConformance(
    {
      name: 'postgres',
      create: () => createPostgresStore({ connectionString, schema: freshSchema('conf') }),
      destroy: (store) => dropSchema(store.schema),
      sibling: (store) => createPostgresStore({ connectionString, schema: store.schema }),
    },
    { suites: ALL_STORE_SUITES },
  );

  describe('on a real server', () => {
    let schema: string;
    const opened: PostgresStore[] = [];
    const schemas: string[] = [];

    async function open(options: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
      const store = await createPostgresStore({ connectionString, schema, ...options });
      opened.push(store);
      return store;
    }

    function fresh(label: string): string {
      schema = freshSchema(label);
      schemas.push(schema);
      return schema;
    }

    const sql = <T extends Record<string, unknown>>(text: string, values: unknown[] = []) =>
      withAdmin(async (client) => (await client.query<T>(text, values)).rows);

    /**
     * The plan of `text` with sequential scans (and sorts, unless `sort`) forbidden: on the
     * near-empty tables of a test the planner rightly prefers them, so forbidding them shows
     * whether an index can serve the query's predicate (and order) at all.
     */
    const forcedPlan = (text: string, values: unknown[] = [], options: { sort?: boolean } = {}) =>
      withAdmin(async (client) => {
        await client.query('BEGIN');
        await client.query('SET LOCAL enable_seqscan = off');
        if (options.sort !== true) await client.query('SET LOCAL enable_sort = off');
        const rows = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
        await client.query('ROLLBACK');
        return rows.rows.map((row) => row['QUERY PLAN']).join('\n');
      });

    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
    });

    afterAll(async () => {
      for (const name of schemas) await dropSchema(name);
    });

    it('creates its schema, every table and the migration record', async () => {
      fresh('tables');
      const store = await open();
      expect(store.kind).toBe('postgres');
      expect(store.schema).toBe(schema);
      const tables = await sql<{ table_name: string }>(
        'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
        [schema],
      );
      expect(tables.map((row) => row.table_name)).toEqual([
        'approvals',
        'audit',
        'audit_head',
        'data_keys',
        'deliveries',
        'executions',
        'messages',
        'migrations',
        'rules',
        'sessions',
        'state',
        'web_sessions',
        'workflow_checkpoints',
        'workflow_runs',
      ]);
      const applied = await sql<{ version: number; name: string }>(
        `SELECT version, name FROM "${schema}".migrations ORDER BY version`,
      );
      expect(applied).toEqual(loadMigrations().map(({ version, name }) => ({ version, name })));
      expect(applied.map((row) => row.name)).toEqual([
        'init',
        'rules',
        'workflows',
        'stalled_sessions',
        'workflow_expiry',
        'deliveries',
        'web_sessions',
        'raised_by',
        'one_request_model',
        'data_keys',
        'audit_erasure',
        'desk_quorum_edit',
        'reminders_claims',
        'paging',
        'run_customer',
        'text_search',
        'continue_due_in_place',
      ]);
    });

    it('orders and compares identifiers and timestamps bytewise, whatever the database collation', async () => {
      fresh('collation');
      await open();
      const columns = await sql<{ table_name: string; column_name: string; collation_name: string | null }>(
        `SELECT table_name, column_name, collation_name FROM information_schema.columns
         WHERE table_schema = $1 AND data_type = 'text'
           AND (column_name IN ('id', 'session', 'request_id', 'status') OR column_name LIKE '%\\_at')`,
        [schema],
      );
      expect(columns.length).toBeGreaterThan(15);
      for (const column of columns)
        expect(column, `${column.table_name}.${column.column_name}`).toMatchObject({ collation_name: 'C' });
    });

    it('upgrades a schema made by the first migration, keeping its data and adding rules', async () => {
      fresh('upgrade');
      const [init] = loadMigrations();
      await withAdmin(async (client) => {
        await client.query('BEGIN');
        await client.query(`CREATE SCHEMA "${schema}"`);
        await client.query(`SET LOCAL search_path TO "${schema}"`);
        await client.query(init?.sql ?? '');
        await client.query(
          'CREATE TABLE migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
        );
        await client.query(`INSERT INTO migrations (version, name) VALUES (1, 'init')`);
        await client.query(
          `INSERT INTO sessions (id, agent, principal, created_at, updated_at) VALUES ('s1', 'bookstore', 'alice', $1, $1)`,
          [at(0)],
        );
        await client.query('COMMIT');
      });
      const store = await open();
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
      const versions = await sql<{ version: number }>(
        `SELECT version FROM "${schema}".migrations ORDER BY 1`,
      );
      expect(versions.map((row) => row.version)).toEqual(loadMigrations().map(({ version }) => version));
    });

    it('can find stalled sessions through the partial index of open batches, never a whole-table scan', async () => {
      fresh('stalled_plan');
      await open();
      const plan = await forcedPlan(stalledSessionsText(tablesIn(schema)), [false, 0, null, 50]);
      expect(plan).toMatch(/Index Scan using sessions_continue_due on sessions s/);
      expect(plan).toMatch(/executions_unknown on executions e/);
      expect(plan).not.toMatch(/Seq Scan|Sort/);
    });

    it("answers the watcher's one question from the first entry of each due index, never a scan", async () => {
      fresh('due_work_plan');
      await open();
      const plan = await forcedPlan(dueWorkSql(tablesIn(schema)));
      expect(plan).toMatch(/Index Only Scan using approvals_due on approvals/);
      expect(plan).toMatch(/Index Only Scan using approvals_nudge_due on approvals/);
      expect(plan).toMatch(/sessions_continue_due on sessions/);
      expect(plan).not.toMatch(/Seq Scan|Sort/);
    });

    it('reads the audit log by cursor as an index range walk on seq, never a whole-table scan', async () => {
      fresh('audit_plan');
      await open();
      const plan = await forcedPlan(auditPageText(tablesIn(schema), false), [10, 100]);
      expect(plan).toMatch(/Index Scan using audit_pkey on audit/);
      expect(plan).toMatch(/Index Cond: \(seq > /);
      expect(plan).not.toMatch(/Seq Scan|Sort/);
    });

    it('a schema at migration 8 migrates: pending port requests and recorded answers become rows, the answers table goes', async () => {
      fresh('adopt');
      const body = {
        format: 1,
        contract: { nodes: {} },
        state: {
          messages: [],
          requests: [
            {
              id: 'req_wait',
              port: 'manager-approval',
              data: { amount: 35, orderId: 1040 },
              createdAt: at(1),
              askedBy: null,
              expiresAt: at(500),
            },
            {
              id: 'req_done',
              port: 'manager-approval',
              data: { amount: 12 },
              createdAt: at(1),
              askedBy: null,
            },
          ],
          origin: { by: 'desk', customer: 'c-100' },
        },
      };
      await withAdmin(async (client) => {
        await client.query('BEGIN');
        await client.query(`CREATE SCHEMA "${schema}"`);
        await client.query(`SET LOCAL search_path TO "${schema}"`);
        await client.query(
          'CREATE TABLE migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
        );
        for (const migration of loadMigrations().slice(0, 8)) {
          await client.query(migration.sql);
          await client.query('INSERT INTO migrations (version, name) VALUES ($1, $2)', [
            migration.version,
            migration.name,
          ]);
        }
        await client.query(
          `INSERT INTO sessions (id, agent, principal, created_at, updated_at) VALUES ('s1', 'bookstore', 'alice', $1, $1)`,
          [at(0)],
        );
        await client.query(
          `INSERT INTO approvals (id, session, agent, call_id, tool, args_json, args_hash, effect, created_at, expires_at, status)
           VALUES ('apr_1', 's1', 'bookstore', 'c1', 'place_order', '{}', $1, 'Orders it.', $2, $3, 'pending')`,
          [request({ id: 'x', session: 's1', args: {} }).argsHash, at(1), at(100)],
        );
        await client.query(
          `INSERT INTO workflow_runs (id, workflow, version, status, latest, latest_seq, created_at, updated_at)
           VALUES ('r', 'refund', 1, 'awaiting_input', 'cp-1', 0, $1, $1)`,
          [at(1)],
        );
        await client.query(
          `INSERT INTO workflow_checkpoints (id, run, seq, parent, superstep, created_at, workflow, version, status, body)
           VALUES ('cp-1', 'r', 0, NULL, 1, $1, 'refund', 1, 'awaiting_input', $2)`,
          [at(1), JSON.stringify(body)],
        );
        await client.query(
          `INSERT INTO workflow_answers (run, request_id, response, answered_by, answered_at, expired)
           VALUES ('r', 'req_done', '{"approved":true}', 'mona', $1, false)`,
          [at(2)],
        );
        await client.query('COMMIT');
      });
      const store = await open();
      expect(await store.getApproval('apr_1')).toMatchObject({
        kind: 'tool-call',
        customer: 'alice',
        run: null,
      });
      expect(await store.getApproval('req_wait')).toMatchObject({
        kind: 'port',
        run: 'r',
        session: 'wf.r',
        args: { amount: 35, orderId: 1040 },
        argsJson: '{"amount":35,"orderId":1040}',
        raisedBy: 'desk',
        customer: 'c-100',
        status: 'pending',
        expiresAt: at(500),
      });
      expect(await store.getApproval('req_done')).toMatchObject({
        status: 'answered',
        decision: { verdict: 'answered', by: 'mona', response: { approved: true } },
      });
      const left = await sql(
        `SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND c.relname = 'workflow_answers'`,
        [schema],
      );
      expect(left).toEqual([]);
      const answer = {
        verdict: 'answered' as const,
        response: 1,
        by: 'mia',
        reason: null,
        at: at(3),
        kind: 'person' as const,
      };
      expect((await store.decide('req_wait', answer)).won).toBe(true);
    });

    it('serves the expiry due-query from the partial index of pending rows, in its order', async () => {
      fresh('due_plan');
      await open();
      const plan = await forcedPlan(dueRequestsSql(tablesIn(schema), true), [at(100), 50, 'port']);
      expect(plan).toMatch(/Index Scan using approvals_due on approvals/);
      expect(plan).not.toMatch(/Seq Scan|Sort/);
    });

    it('pages requests by an index walk in the page order (keyset), and the session audit cursor on (session, seq)', async () => {
      fresh('page_plan');
      await open();
      const dialect = postgresPageDialect(tablesIn(schema).approvals);
      // The query with a cursor bound to its own filters and sort, as a page hands one out.
      const paged = (query: RequestPageQuery): RequestPageQuery => ({
        ...query,
        after: encodeCursor(
          request({ id: 'x', session: 's1', decision: byPerson('approved', 5) }),
          planPage(query),
        ),
      });
      const cases: Array<[RequestPageQuery, RegExp]> = [
        [paged({ limit: 50 }), /approvals_by_created/],
        [paged({ limit: 50, status: 'pending' }), /approvals_by_status/],
        [
          paged({ limit: 50, status: 'pending', sort: 'newest' }),
          /Index Scan Backward using approvals_by_status/,
        ],
        [paged({ limit: 50, sort: 'expiring' }), /approvals_due/],
        [paged({ limit: 50, sort: 'decided' }), /Index Scan Backward using approvals_decided/],
        [paged({ limit: 50, session: 's1' }), /approvals_by_session/],
        [{ limit: 50, run: 'r-1' }, /approvals_by_run/],
        [
          { limit: 50, status: 'pending', text: 'refund', tool: 'order', customer: 'c', role: 'manager' },
          /approvals_by_status/,
        ],
      ];
      for (const [query, index] of cases) {
        const { page, count } = requestPageSql(dialect, planPage({ ...query, count: true }));
        const pagePlan = await forcedPlan(page.text, page.values);
        expect(pagePlan, JSON.stringify(query)).toMatch(index);
        expect(pagePlan, JSON.stringify(query)).not.toMatch(/Seq Scan|Sort/);
        if (count !== null) expect(await forcedPlan(count.text, count.values)).not.toMatch(/Seq Scan/);
      }
      const audit = await forcedPlan(auditPageText(tablesIn(schema), true), [10, 100, 's1']);
      expect(audit).toMatch(/Index Scan using audit_by_session on audit/);
      expect(audit).toMatch(/Index Cond: \(\(session = .*\) AND \(seq > /);
      expect(audit).not.toMatch(/Seq Scan|Sort/);
    });

    it('counts decision stats from a range of the index of decided rows', async () => {
      fresh('stats_plan');
      await open();
      for (const [name, text] of Object.entries(postgresStatsSql(tablesIn(schema)))) {
        const plan = await forcedPlan(text, [at(0), at(100)], { sort: true });
        expect(plan, name).toMatch(/Index (Only )?Scan (Backward )?using approvals_decided on approvals/);
        expect(plan, name).not.toMatch(/Seq Scan/);
      }
    });

    it('serves the nudge due-query from the partial index of pending rows by next nudge, in its order', async () => {
      fresh('nudge_plan');
      await open();
      const plan = await forcedPlan(nudgesDueSql(tablesIn(schema), true), [at(100), 50, 'port']);
      expect(plan).toMatch(/Index Scan using approvals_nudge_due on approvals/);
      expect(plan).not.toMatch(/Seq Scan|Sort/);
    });

    it('refuses a schema migrated by a newer countersign', async () => {
      fresh('newer');
      await (await open()).close();
      await sql(`INSERT INTO "${schema}".migrations (version, name) VALUES (99, 'future')`);
      const attempt = open();
      await expect(attempt).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      await expect(attempt).rejects.toThrow(/schema version 99/);
    });

    it('keeps everything across a new pool', async () => {
      fresh('reopen');
      const first = await open();
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

      const second = await open();
      expect(await second.exportSession('s1')).toEqual(before.snapshot);
      expect(await second.listAudit()).toEqual(before.audit);
      expect(await second.getLease('s1')).toEqual(before.lease);
      expect(await second.getState('bookstore', 'orders')).toEqual(['o-1']);
    });

    it('stores the arguments once, as the exact canonical text', async () => {
      fresh('args');
      const store = await open();
      await leasedSession(store, 's1');
      const r1 = request({ id: 'r1', session: 's1', args: { z: 1, a: ['x', { c: true, b: null }] } });
      await raise(store, 's1', [r1]);
      const stored = await sql<{ args_json: string }>(`SELECT args_json FROM "${schema}".approvals`);
      expect(stored).toEqual([{ args_json: r1.argsJson }]);
    });

    it('passes every stored payload through the codec', async () => {
      fresh('codec');
      const marked: PayloadCodec = {
        name: 'marked',
        encode: (value) => `enc:${Buffer.from(jsonCodec.encode(value)).toString('base64')}`,
        decode: (text, where) => {
          if (!text.startsWith('enc:')) throw new Error(`unmarked payload at ${where}`);
          return jsonCodec.decode(Buffer.from(text.slice(4), 'base64').toString('utf8'), where);
        },
      };
      const store = await open({ codec: marked });
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
      const payloads = await sql<{ v: string }>(
        [
          'SELECT body AS v FROM messages',
          'SELECT batch AS v FROM sessions',
          'SELECT args_json AS v FROM approvals',
          'SELECT decision AS v FROM approvals',
          'SELECT args AS v FROM executions',
          'SELECT result AS v FROM executions',
          'SELECT data AS v FROM audit',
          'SELECT value AS v FROM state',
        ]
          .map((query) => query.replace('FROM ', `FROM "${schema}".`))
          .join(' UNION ALL '),
      );
      expect(payloads.length).toBeGreaterThanOrEqual(8);
      for (const { v } of payloads) expect(v).toMatch(/^enc:/);
      expect((await store.loadMessages('s1'))[0]?.message).toEqual(user('secret'));
      expect((await store.getExecution('r1'))?.result).toBe('secret result');
      expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
    });

    it('reports a damaged message body as CORRUPT_DATA naming the row', async () => {
      fresh('corrupt');
      const store = await open();
      await leasedSession(store, 's1');
      await store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [user('a'), user('b')],
        at: at(1),
      });
      await sql(`UPDATE "${schema}".messages SET body = '{not json' WHERE session = 's1' AND seq = 1`);
      const load = store.loadMessages('s1');
      await expect(load).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
      await expect(load).rejects.toThrow('messages(session=s1, seq=1)');
    });

    it('reports an impossible status as CORRUPT_DATA naming the row', async () => {
      fresh('status');
      const store = await open();
      await leasedSession(store, 's1');
      await raise(store, 's1', [request({ id: 'r1', session: 's1' })]);
      await sql(`UPDATE "${schema}".approvals SET status = 'maybe' WHERE id = 'r1'`);
      const read = store.getApproval('r1');
      await expect(read).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
      await expect(read).rejects.toThrow('approvals(id=r1)');
    });

    it('an audit row edited in the database breaks the chain at that entry', async () => {
      fresh('tamper');
      const store = await open();
      await store.appendAudit(
        [event('request.raised', 's1'), event('request.decided', 's1'), event('execution.started', 's1')],
        at(1),
      );
      expect(verifyAuditChain(await store.listAudit())).toMatchObject({ ok: true, entries: 3 });
      await sql(`UPDATE "${schema}".audit SET actor = 'mallory' WHERE seq = 2`);
      expect(verifyAuditChain(await store.listAudit())).toMatchObject({ ok: false, brokenAt: 2 });
    });

    it('an emptied audit table no longer verifies: the requests and ledger rows name what is missing', async () => {
      fresh('emptied');
      const store = await open();
      await leasedSession(store, 's1');
      await raise(store, 's1', [request({ id: 'r1', session: 's1' })]);
      await store.appendAudit([event('request.raised', 's1', 'r1')], at(11));
      await store.decide('r1', byPerson('rejected', 12), [event('request.decided', 's1', 'r1')]);
      const gaps = async () =>
        auditGaps(
          indexAudit(await store.listAudit()),
          await store.listApprovals(),
          await store.listExecutions(),
        );
      expect(await gaps()).toEqual([]);
      await sql(`DELETE FROM "${schema}".audit`);
      expect(verifyAuditChain(await store.listAudit())).toMatchObject({ ok: true, entries: 0 });
      expect(await gaps()).toEqual([
        { missing: 'request.raised', count: 1, first: ['r1'] },
        { missing: 'request.decided', count: 1, first: ['r1'] },
      ]);
    });

    it('a closed store says so', async () => {
      fresh('closed');
      const store = await open();
      await store.close();
      await expect(store.getSession('s1')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      await expect(store.close()).resolves.toBeUndefined();
    });

    it('survives the server dropping its idle connections', async () => {
      fresh('dropped');
      const store = await open({ connectionString: `${connectionString}?application_name=${schema}` });
      await store.setState('ns', 'k', 1);
      const killed = await sql<{ ok: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
         WHERE application_name = $1 AND state = 'idle'`,
        [schema],
      );
      expect(killed.length).toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await store.getState('ns', 'k')).toBe(1);
    });

    it.each([
      ['an upper-case name', 'Countersign'],
      ['a quote', 'a"b'],
      ['a reserved prefix', 'pg_things'],
      ['a leading digit', '1abc'],
      ['a name too long', 'a'.repeat(64)],
    ])('refuses %s as the schema before connecting', async (_label, name) => {
      const attempt = createPostgresStore({
        connectionString: 'postgres://nobody@127.0.0.1:1/none',
        schema: name,
      });
      await expect(attempt).rejects.toMatchObject({ code: 'CONFIG_ERROR' });
    });

    it('a server that is not there is STORE_UNAVAILABLE, quickly, naming COUNTERSIGN_STORE and no password', async () => {
      const started = Date.now();
      const attempt = createPostgresStore({
        connectionString: 'postgres://someone:s3cret@127.0.0.1:1/app',
        pool: { connectionTimeoutMillis: 1000 },
      });
      await expect(attempt).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      await expect(attempt).rejects.toThrow(/COUNTERSIGN_STORE/);
      await expect(attempt).rejects.toThrow(/127\.0\.0\.1:1\/app/);
      await expect(attempt).rejects.not.toThrow(/s3cret/);
      expect(Date.now() - started).toBeLessThan(3000);
    });

    it('an unknown role or database is STORE_UNAVAILABLE', async () => {
      const server = new URL(connectionString);
      const noRole = new URL(server);
      noRole.username = 'no_such_role_countersign';
      const noDb = new URL(server);
      noDb.pathname = '/no_such_database_countersign';
      for (const wrong of [noRole, noDb]) {
        const attempt = createPostgresStore({ connectionString: wrong.toString() });
        await expect(attempt).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
        await expect(attempt).rejects.toThrow(/COUNTERSIGN_STORE/);
      }
    });

    it('retries a serialization failure or deadlock a bounded number of times', async () => {
      const conflict = Object.assign(new Error('could not serialize access'), { code: '40001' });
      let calls = 0;
      expect(
        await withRetries(async () => {
          calls += 1;
          if (calls < 3) throw conflict;
          return 'done';
        }),
      ).toBe('done');
      expect(calls).toBe(3);
      calls = 0;
      const forever = withRetries(async () => {
        calls += 1;
        throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      }, 4);
      await expect(forever).rejects.toThrow(/deadlock/);
      expect(calls).toBe(4);
      calls = 0;
      await expect(
        withRetries(async () => {
          calls += 1;
          throw Object.assign(new Error('duplicate key'), { code: '23505' });
        }),
      ).rejects.toThrow(/duplicate/);
      expect(calls).toBe(1);
    });

    it('four processes migrating one fresh schema at once apply each migration exactly once', async () => {
      fresh('migrate_race');
      const startAt = startSoon();
      const names = ['p1', 'p2', 'p3', 'p4'];
      const outputs = await Promise.all(
        names.map((name) => race(['migrate', connectionString, schema, name, startAt])),
      );
      expect(outputs).toEqual(names.map(() => ({ ok: true })));
      const store = await open();
      for (const name of names) expect(await store.getState('race', name)).toBe(true);
      const versions = await sql<{ version: number }>(
        `SELECT version FROM "${schema}".migrations ORDER BY 1`,
      );
      expect(versions.map((row) => row.version)).toEqual(loadMigrations().map((m) => m.version));
    });

    it('six processes racing to decide one request: exactly one wins, one audit entry', async () => {
      fresh('decide_race');
      const store = await open();
      await leasedSession(store, 's1');
      await raise(store, 's1', [request({ id: 'r1', session: 's1', expiresAt: '2999-01-01T00:00:00.000Z' })]);
      const startAt = startSoon();
      const deciders = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'];
      const results = await Promise.all(
        deciders.map((by) => race(['decide', connectionString, schema, 'r1', by, startAt])),
      );
      expect(results.filter((result) => result.won === true)).toHaveLength(1);
      const winner = (await store.getApproval('r1'))?.decision?.by;
      expect(deciders).toContain(winner);
      for (const result of results) expect(result.decidedBy).toBe(winner);
      const audit = await store.listAudit();
      expect(audit.map((entry) => entry.actor)).toEqual([winner]);
      expect(verifyAuditChain(audit).ok).toBe(true);
    });

    it('four processes committing the same step: one is saved, the others are SESSION_BUSY', async () => {
      fresh('commit_race');
      const store = await open();
      await leasedSession(store, 's1', 'run-1');
      const startAt = startSoon();
      const results = await Promise.all(
        [1, 2, 3, 4].map(() => race(['commit', connectionString, schema, 's1', 'run-1', startAt])),
      );
      expect(results.filter((result) => result.ok === true)).toEqual([{ ok: true, messageCount: 1 }]);
      expect(results.filter((result) => result.ok === false)).toEqual(
        Array.from({ length: 3 }, () => ({ ok: false, code: 'SESSION_BUSY' })),
      );
      expect(await store.loadMessages('s1')).toHaveLength(1);
      expect((await store.getSession('s1'))?.messageCount).toBe(1);
    });

    it('a process whose lease was taken over cannot commit: SESSION_BUSY, nothing written', async () => {
      fresh('stale_lease');
      const store = await open();
      await leasedSession(store, 's1', 'run-a');
      // Another process takes the session over (as after a crash) and commits its own step.
      const other = await createPostgresStore({ connectionString, schema });
      opened.push(other);
      expect(
        await other.acquireLease({
          session: 's1',
          owner: 'run-b',
          untilMs: atMs(2000),
          nowMs: atMs(1),
          takeOverFrom: 'run-a',
        }),
      ).toBe(true);
      const [stale, takenOver] = await Promise.allSettled([
        store.commitStep({
          session: 's1',
          leaseOwner: 'run-a',
          expectedMessageCount: 0,
          append: [user('stale')],
          audit: [event('request.raised', 's1')],
          at: at(2),
        }),
        race(['commit', connectionString, schema, 's1', 'run-b', '0']),
      ]);
      expect(stale).toMatchObject({ status: 'rejected', reason: { code: 'SESSION_BUSY' } });
      expect(takenOver).toMatchObject({ status: 'fulfilled', value: { ok: true, messageCount: 1 } });
      expect((await store.loadMessages('s1')).map((m) => m.message)).not.toContainEqual(user('stale'));
      expect(await store.listAudit()).toEqual([]);
    });

    it('a fenced ledger start meets a takeover still in flight: it waits for it, then is refused', async () => {
      fresh('fenced_start');
      const store = await open({ connectionString: withApplicationName(connectionString, schema) });
      await leasedSession(store, 's1', 'run-a');
      const start = {
        requestId: 'r1',
        session: 's1',
        callId: 'c1',
        tool: 't',
        args: {},
        idempotencyKey: 'countersign:r1',
        at: at(2),
        lease: { owner: 'run-a', nowMs: atMs(2) },
      };
      await withAdmin(async (taker) => {
        // Another process takes the session over; its transaction has not committed yet. The
        // start's snapshot still shows run-a as the holder: only the session row's lock
        // (FOR SHARE) makes it wait and judge the row as the takeover leaves it.
        await taker.query('BEGIN');
        await taker.query(`UPDATE "${schema}".sessions SET lease_owner = 'run-b' WHERE id = 's1'`);
        const attempt = store.startExecution(start).then(
          () => 'started',
          (error: unknown) => error,
        );
        // Wait until the start is blocked on that row lock, then commit the takeover.
        const deadline = Date.now() + 10_000;
        for (;;) {
          const waiting = await sql<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE application_name = $1 AND wait_event_type = 'Lock' AND position('INSERT INTO' in query) > 0`,
            [schema],
          );
          if (waiting[0]?.n === 1) break;
          if (Date.now() > deadline) throw new Error('the fenced start never waited for the takeover');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        await taker.query('COMMIT');
        expect(await attempt).toMatchObject({ code: 'SESSION_BUSY' });
      });
      expect(await store.getExecution('r1')).toBeNull();
      expect(await store.getLease('s1')).toMatchObject({ owner: 'run-b' });
    });

    it('four processes appending audit events at once keep one unbroken chain', async () => {
      fresh('audit_race');
      await open();
      const startAt = startSoon();
      const writers = ['w1', 'w2', 'w3', 'w4'];
      await Promise.all(
        writers.map((name) => race(['audit', connectionString, schema, name, '25', startAt])),
      );
      const entries = await (await open()).listAudit();
      expect(entries).toHaveLength(4 * 25 * 2);
      expect(entries.map((entry) => entry.seq)).toEqual(entries.map((_, i) => i + 1));
      expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: 200 });
      // Each writer's pair was appended in one transaction, so it sits side by side.
      for (let i = 0; i < entries.length; i += 2) {
        expect(entries[i]?.requestId).toBe(entries[i + 1]?.requestId);
      }
    });
  });
});
