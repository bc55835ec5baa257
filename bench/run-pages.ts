// A page of workflow runs at 100, 10,000 and 100,000 runs, on SQLite and PostgreSQL: what
// GET /v1/runs and `countersign runs` read (issue 16), against the old whole list.
//   node bench/run-pages.ts                        # both backends, 100 / 10,000 / 100,000
//   RUN_PAGE_SIZES=100,100000 node bench/run-pages.ts
//   RUN_PAGE_BACKENDS=sqlite node bench/run-pages.ts
// The runs are filled with bulk INSERTs into workflow_runs (one transaction on SQLite,
// unnest() chunks on PostgreSQL): a page reads that table only, so no checkpoint rows are
// needed. Runs are spread over 500 customers, 5 statuses and 2 workflows.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { RUN_STATUSES, type RunPageQuery } from '../src/store/checkpoint-store.ts';
import { postgresRunPageDialect } from '../src/store/postgres/postgres-checkpoints.ts';
import { createPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { encodeRunCursor, planRunPage } from '../src/store/run-page.ts';
import { runPageSql } from '../src/store/sql/run-page-sql.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { admin, BENCH_PG_URL, postgresProblem } from './postgres.ts';

type Backend = 'sqlite' | 'postgres';

const SIZES = (process.env.RUN_PAGE_SIZES ?? '100,10000,100000').split(',').map(Number);
const BACKENDS = (process.env.RUN_PAGE_BACKENDS ?? 'sqlite,postgres').split(',') as Backend[];
const PAGE = 50;
const REPEATS = Number(process.env.RUN_PAGE_REPEATS ?? 30);

const base = Date.now() - 86_400_000;
const createdAt = (i: number) => new Date(base + i * 100).toISOString();
const runId = (i: number) => `run-${String(i).padStart(7, '0')}`;

function rowsOf(n: number): string[][] {
  const rows: string[][] = [];
  for (let i = 0; i < n; i++) {
    rows.push([
      runId(i),
      i % 2 === 0 ? 'refund' : 'support',
      RUN_STATUSES[i % RUN_STATUSES.length] ?? 'running',
      `cp-${i}`,
      createdAt(i),
      createdAt(i + 5),
      `c-${i % 500}`,
    ]);
  }
  return rows;
}

const RUN_INSERT = 'id, workflow, version, status, latest, latest_seq, created_at, updated_at, customer';

function fillSqlite(path: string, n: number): void {
  const db = new DatabaseSync(path);
  db.exec('BEGIN IMMEDIATE');
  const insert = db.prepare(`INSERT INTO workflow_runs (${RUN_INSERT}) VALUES (?, ?, 1, ?, ?, 0, ?, ?, ?)`);
  for (const row of rowsOf(n)) insert.run(...row);
  db.exec('COMMIT');
  db.exec('ANALYZE');
  db.close();
}

async function fillPostgres(schema: string, n: number): Promise<void> {
  const rows = rowsOf(n);
  await admin(async (client) => {
    await client.query('BEGIN');
    for (let start = 0; start < n; start += 10_000) {
      const chunk = rows.slice(start, start + 10_000);
      const columns = Array.from({ length: 7 }, (_, c) => chunk.map((row) => row[c]));
      await client.query(
        `INSERT INTO "${schema}".workflow_runs (${RUN_INSERT})
         SELECT a, b, 1, c, d, 0, e, f, g
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
           AS t(a, b, c, d, e, f, g)`,
        columns,
      );
    }
    await client.query('COMMIT');
    await client.query(`ANALYZE "${schema}".workflow_runs`);
  });
}

interface Opened {
  store: Awaited<ReturnType<typeof createPostgresStore>> | ReturnType<typeof createSqliteStore>;
  /**
   * Rows of workflow_runs the database examined for one page (PostgreSQL's EXPLAIN ANALYZE:
   * rows the scan returned plus those its filter removed); null on SQLite.
   */
  rowsExamined: (query: RunPageQuery) => Promise<number | null>;
  close: () => Promise<void>;
}

type PlanNode = {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
};

function examined(node: PlanNode): number {
  const own =
    node['Relation Name'] === 'workflow_runs'
      ? ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0)) * (node['Actual Loops'] ?? 1)
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + examined(child), 0);
}

async function open(backend: Backend, n: number): Promise<Opened> {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-run-pages-'));
    const path = join(dir, 'store.db');
    await createSqliteStore({ path }).close();
    fillSqlite(path, n);
    const store = createSqliteStore({ path });
    return {
      store,
      rowsExamined: async () => null,
      close: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = `cs_bench_runs_${randomBytes(4).toString('hex')}`;
  await (await createPostgresStore({ connectionString: BENCH_PG_URL, schema })).close();
  await fillPostgres(schema, n);
  const store = await createPostgresStore({ connectionString: BENCH_PG_URL, schema });
  const dialect = postgresRunPageDialect(`"${schema}".workflow_runs`);
  return {
    store,
    rowsExamined: (query) =>
      admin(async (client) => {
        const { page } = runPageSql(dialect, planRunPage(query));
        const result = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) ${page.text}`,
          page.values,
        );
        const plan = result.rows[0]?.['QUERY PLAN'][0]?.Plan;
        return plan === undefined ? null : examined(plan);
      }),
    close: async () => {
      await store.close();
      await admin((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    },
  };
}

/** Median wall time of `repeats` runs after 10 warm-ups, ms. */
async function median(work: () => Promise<unknown>, repeats = REPEATS): Promise<number> {
  for (let i = 0; i < 10; i++) await work();
  const wall: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const start = performance.now();
    await work();
    wall.push(performance.now() - start);
  }
  wall.sort((a, b) => a - b);
  return Math.round((wall[Math.floor(wall.length / 2)] ?? 0) * 1000) / 1000;
}

interface Row {
  backend: Backend;
  runs: number;
  firstPage: number;
  deepPage: number;
  customerPage: number;
  statusWorkflowPage: number;
  countedPage: number;
  /** Rows PostgreSQL examined for a first page, a page from the cursor, a customer's (EXPLAIN ANALYZE); null on SQLite. */
  rowsExamined: { first: number | null; deep: number | null; customer: number | null };
  /** What GET /v1/runs did before: every run read. */
  wholeList: number;
}

async function measure(backend: Backend, n: number): Promise<Row> {
  const opened = await open(backend, n);
  const { store } = opened;
  try {
    const first: RunPageQuery = { limit: PAGE };
    const deep = Math.floor(n * 0.1);
    const after = encodeRunCursor(
      {
        run: runId(deep),
        createdAt: createdAt(deep),
        workflow: 'refund',
        version: 1,
        status: 'running',
        checkpoint: '',
        customer: null,
        updatedAt: '',
      },
      planRunPage(first),
    );
    const firstPage = await median(() => store.pageRuns(first));
    const deepPage = await median(() => store.pageRuns({ ...first, after }));
    const customerPage = await median(() => store.pageRuns({ ...first, customer: 'c-7' }));
    const statusWorkflowPage = await median(() =>
      store.pageRuns({ ...first, status: 'awaiting_input', workflow: 'support' }),
    );
    const countedPage = await median(() => store.pageRuns({ ...first, count: true }));
    const rowsExamined = {
      first: await opened.rowsExamined(first),
      deep: await opened.rowsExamined({ ...first, after }),
      customer: await opened.rowsExamined({ ...first, customer: 'c-7' }),
    };
    const wholeList = await median(() => store.listRuns(), n >= 100_000 ? 5 : 10);
    return {
      backend,
      runs: n,
      firstPage,
      deepPage,
      customerPage,
      statusWorkflowPage,
      countedPage,
      rowsExamined,
      wholeList,
    };
  } finally {
    await opened.close();
  }
}

const rows: Row[] = [];
for (const backend of BACKENDS) {
  if (backend === 'postgres') {
    const problem = await postgresProblem();
    if (problem !== null) {
      console.log(`postgres skipped: ${problem}`);
      continue;
    }
  }
  for (const n of SIZES) {
    const row = await measure(backend, n);
    rows.push(row);
    console.log(JSON.stringify(row));
  }
}

console.log(
  '\n| backend | runs | first page | page from a cursor | a customer’s | status + workflow | counted | rows examined (PG: first, cursor, customer) | whole list (before) |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(
    `| ${r.backend} | ${r.runs.toLocaleString('en')} | ${r.firstPage} | ${r.deepPage} | ${r.customerPage} | ${r.statusWorkflowPage} | ${r.countedPage} | ${r.rowsExamined.first === null ? '—' : `${r.rowsExamined.first}, ${r.rowsExamined.deep}, ${r.rowsExamined.customer}`} | ${r.wholeList} |`,
  );
}
const dir = join(import.meta.dirname, 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'run-pages.json'), `${JSON.stringify(rows, null, 2)}\n`);
