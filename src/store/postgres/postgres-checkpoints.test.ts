import { describe, expect, it } from 'vitest';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  TEST_PG_URL,
  withAdmin,
} from '../../../test/helpers/postgres.ts';
import { verifyAuditChain } from '../../core/audit.ts';
import type { RunPageQuery } from '../checkpoint-store.ts';
import {
  answerEvent,
  checkpoint,
  describeCheckpointStoreConformance,
} from '../conformance/checkpoint-store-conformance.ts';
import { answeredBy, at, portRequest } from '../conformance/fixtures.ts';
import { openCheckpointStore } from '../open-checkpoint-store.ts';
import { encodeRunCursor, planRunPage } from '../run-page.ts';
import { runPageSql } from '../sql/run-page-sql.ts';
import { loadMigrations } from './migrate.ts';
import { postgresRunPageDialect } from './postgres-checkpoints.ts';
import { createPostgresStore } from './postgres-store.ts';

const url = await postgresForTests();

describe.skipIf(url === null)('PostgreSQL checkpoint store', () => {
  const connectionString = url ?? TEST_PG_URL;

  describeCheckpointStoreConformance({
    name: 'postgres',
    create: () => createPostgresStore({ connectionString, schema: freshSchema('cp') }),
    destroy: (store) => dropSchema(store.schema),
    audit: (store) => store.listAudit(),
  });

  it('an audit row the database refuses takes the answer with it; once it is allowed, both commit together', async () => {
    const schema = freshSchema('cp_audit');
    const store = await createPostgresStore({ connectionString, schema });
    const answer = answeredBy('mona', 20);
    await store.saveCheckpoint(checkpoint('r', 0), null, { requests: [portRequest('r', 'req_1')] });
    try {
      await withAdmin((client) =>
        client.query(`
          CREATE FUNCTION "${schema}".audit_refuses() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$;
          CREATE TRIGGER audit_refuses BEFORE INSERT ON "${schema}".audit
            FOR EACH ROW EXECUTE FUNCTION "${schema}".audit_refuses();`),
      );
      await expect(store.decide('req_1', answer, [answerEvent('mona')])).rejects.toThrow(/audit refused/);
      expect((await store.getApproval('req_1'))?.status).toBe('pending');
      expect(await store.listAudit()).toEqual([]);

      await withAdmin((client) => client.query(`DROP TRIGGER audit_refuses ON "${schema}".audit`));
      expect((await store.decide('req_1', answer, [answerEvent('mona')])).won).toBe(true);
      expect(await store.listAudit({ session: 'wf.r' })).toMatchObject([
        { kind: 'request.decided', actor: 'mona', requestId: 'req_1' },
      ]);
      expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });

  it("shares the agents' state table, and a damaged body names its row", async () => {
    const schema = freshSchema('cp_state');
    const store = await createPostgresStore({ connectionString, schema });
    try {
      await store.setState('bookstore', 'order:1040', { status: 'Delivered' });
      expect(await store.claimState('bookstore', 'order:1040', 'x')).toEqual({
        won: false,
        value: { status: 'Delivered' },
      });
      await store.saveCheckpoint(checkpoint('r', 0), null);
      await withAdmin((client) =>
        client.query(`UPDATE "${schema}".workflow_checkpoints SET body = '{"trunc' WHERE id = 'cp-r-0'`),
      );
      await expect(store.latestCheckpoint('r')).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
      await expect(store.latestCheckpoint('r')).rejects.toThrow(/workflow_checkpoints\(id=cp-r-0\)/);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });

  it('pages runs by walking the index of the most selective filter in the page order: no sort, no scan', async () => {
    const schema = freshSchema('cp_run_plans');
    const store = await createPostgresStore({ connectionString, schema });
    try {
      const dialect = postgresRunPageDialect(`"${schema}".workflow_runs`);
      // The query with a cursor bound to its own filters and sort, as a page hands one out.
      const paged = (query: RunPageQuery): RunPageQuery => ({
        ...query,
        after: encodeRunCursor(
          {
            run: 'r-1',
            workflow: 'refund',
            version: 1,
            status: 'running',
            checkpoint: 'cp',
            customer: null,
            createdAt: at(0),
            updatedAt: at(0),
          },
          planRunPage(query),
        ),
      });
      const cases: Array<[RunPageQuery, RegExp]> = [
        [{ limit: 50 }, /Index Scan Backward using workflow_runs_by_created/],
        [paged({ limit: 50 }), /Index Scan Backward using workflow_runs_by_created/],
        [paged({ limit: 50, sort: 'oldest' }), /Index Scan using workflow_runs_by_created/],
        [paged({ limit: 50, status: 'awaiting_input' }), /workflow_runs_by_status/],
        [paged({ limit: 50, workflow: 'refund', sort: 'oldest' }), /workflow_runs_by_workflow/],
        [paged({ limit: 50, customer: 'c-100' }), /workflow_runs_by_customer/],
        [
          { limit: 50, customer: 'c-100', status: 'completed', workflow: 'refund' },
          /workflow_runs_by_customer/,
        ],
      ];
      const explain = (text: string, values: unknown[]) =>
        withAdmin(async (client) => {
          await client.query('BEGIN');
          // On empty tables a scan and a sort are cheaper; forbidding them shows whether an
          // index serves the filter in the page's order at all.
          await client.query('SET LOCAL enable_seqscan = off');
          await client.query('SET LOCAL enable_sort = off');
          const rows = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
          await client.query('ROLLBACK');
          return rows.rows.map((row) => row['QUERY PLAN']).join('\n');
        });
      for (const [query, index] of cases) {
        const { page, count } = runPageSql(dialect, planRunPage({ ...query, count: true }));
        const pagePlan = await explain(page.text, page.values);
        expect(pagePlan, JSON.stringify(query)).toMatch(index);
        expect(pagePlan, JSON.stringify(query)).not.toMatch(/Seq Scan|Sort/);
        if (count !== null) expect(await explain(count.text, count.values)).not.toMatch(/Seq Scan/);
      }
      const runsOf = await explain(`SELECT id FROM "${schema}".workflow_runs WHERE customer = $1`, ['c-100']);
      expect(runsOf).toMatch(/workflow_runs_by_customer/);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });

  it('migration 015: existing runs get their customer where SQL can read it; a sealed one on its next checkpoint', async () => {
    const schema = freshSchema('cp_run_customer');
    const body = (customer: unknown) =>
      JSON.stringify({ format: 1, contract: { nodes: {} }, state: { origin: { by: 'desk', customer } } });
    // What the encrypting codec writes: no SQL function reads inside it (nor may the cast try).
    const sealed = 'cs1:dk_1:bm90IGZvciB5b3VyIGV5ZXM';
    await withAdmin(async (client) => {
      await client.query('BEGIN');
      await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(`SET LOCAL search_path TO "${schema}"`);
      await client.query(
        'CREATE TABLE migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      for (const migration of loadMigrations().slice(0, 14)) {
        await client.query(migration.sql);
        await client.query('INSERT INTO migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
      }
      for (const [id, text] of [
        ['r-plain', body('c-100')],
        ['r-nobody', body(null)],
        ['r-odd', body(42)],
        ['r-sealed', sealed],
        ['r-sealed-alone', sealed],
      ] as const) {
        await client.query(
          `INSERT INTO workflow_runs (id, workflow, version, status, latest, latest_seq, created_at, updated_at)
           VALUES ($1, 'refund', 1, 'awaiting_input', $2, 0, $3, $3)`,
          [id, `cp-${id}-0`, at(1)],
        );
        await client.query(
          `INSERT INTO workflow_checkpoints (id, run, seq, parent, superstep, created_at, workflow, version, status, body)
           VALUES ($1, $2, 0, NULL, 0, $3, 'refund', 1, 'awaiting_input', $4)`,
          [`cp-${id}-0`, id, at(1), text],
        );
      }
      const request = portRequest('r-sealed', 'req_1', { customer: 'c-300' });
      await client.query(
        `INSERT INTO approvals (id, session, agent, call_id, tool, args_json, args_hash, effect, created_at,
           expires_at, status, kind, run, customer)
         VALUES ('req_1', 'wf.r-sealed', 'refund', 'manager-approval', 'manager-approval', $1, $2, 'Refund.', $3,
           $4, 'pending', 'port', 'r-sealed', 'c-300')`,
        [request.argsJson, request.argsHash, at(1), at(100)],
      );
      await client.query('COMMIT');
    });
    const store = await createPostgresStore({ connectionString, schema });
    try {
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
      const next = checkpoint('r-sealed-alone', 1, { createdAt: at(2), customer: 'c-400' });
      expect((await store.saveCheckpoint(next, 'cp-r-sealed-alone-0')).saved).toBe(true);
      const after = checkpoint('r-sealed-alone', 2, { createdAt: at(3), customer: 'c-666' });
      expect((await store.saveCheckpoint(after, 'cp-r-sealed-alone-1')).saved).toBe(true);
      expect((await store.pageRuns({ limit: 5, customer: 'c-400' })).items.map((row) => row.run)).toEqual([
        'r-sealed-alone',
      ]);
      expect(await store.erasePrincipal({ principal: 'c-400', at: at(9) })).toMatchObject({ runs: 1 });
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });

  it('openCheckpointStore(postgres://…) returns the PostgreSQL store', async () => {
    const schema = freshSchema('cp_open');
    const store = await openCheckpointStore(`${connectionString}?schema=${schema}`);
    try {
      expect(store.kind).toBe('postgres');
      expect((await store.saveCheckpoint(checkpoint('r', 0), null)).saved).toBe(true);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });
});
