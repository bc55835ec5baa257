// Cost per request listed, decided and expired, and an idle server's CPU, at 100, 10,000 and
// 100,000 waiting requests, on SQLite and PostgreSQL: the numbers of issue 16 item 3.
//   node bench/flat-cost.ts                  # both backends, 100 / 10,000 / 100,000
//   FLAT_SIZES=100,10000 node bench/flat-cost.ts
//   FLAT_BACKENDS=sqlite node bench/flat-cost.ts
//   FLAT_ONLY=text node bench/flat-cost.ts   # sections: sizes, text, idle, stats
// The backlog is filled with bulk INSERTs (one transaction on SQLite, unnest() chunks on
// PostgreSQL), not agent runs: the rows are what an agent writes when it stops for a person
// (a session with an open batch, one pending request), so every query sees a real backlog.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { bookstoreAgent } from '../examples/bookstore/app.ts';
import type { ApprovalRequest } from '../src/core/approval.ts';
import { createDemoModel } from '../src/model/demo-model.ts';
import { createServer } from '../src/server/create-server.ts';
import { postgresPageDialect } from '../src/store/postgres/page-requests.ts';
import { createPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { tablesIn } from '../src/store/postgres/schema-name.ts';
import { encodeCursor, planPage } from '../src/store/request-page.ts';
import { requestPageSql } from '../src/store/sql/request-page-sql.ts';
import { SQLITE_PAGE_DIALECT } from '../src/store/sqlite/page-requests.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { RequestPageQuery, Store } from '../src/store/store.ts';
import { admin, BENCH_PG_URL, postgresProblem } from './postgres.ts';

type Backend = 'sqlite' | 'postgres';

const SIZES = (process.env.FLAT_SIZES ?? '100,10000,100000').split(',').map(Number);
const BACKENDS = (process.env.FLAT_BACKENDS ?? 'sqlite,postgres').split(',') as Backend[];
/** Requests decided, and requests expired, per size (taken from the backlog). */
const TOUCHED = 200;
const PAGE = 50;
const REPEATS = Number(process.env.FLAT_REPEATS ?? 30);
// Three times the watcher's longest idle sleep (10 s), so a window holds several of its passes.
const IDLE_SECONDS = Number(process.env.FLAT_IDLE_SECONDS ?? 30);
/** Decided rows for the /v1/stats figure. */
const STATS_DECIDED = Number(process.env.FLAT_STATS_DECIDED ?? 100_000);

const base = Date.now() - 3_600_000;
const createdAt = (i: number) => new Date(base + i * 10).toISOString();
const id = (i: number) => `apr-${String(i).padStart(7, '0')}`;
const tools = ['cancel_order', 'refund', 'place_order'];

/** Requests decided, and expired, at size n: TOUCHED, or a quarter of a small backlog. */
const touchedAt = (n: number) => Math.min(TOUCHED, Math.floor(n / 4));

/** One waiting request per session, as an agent leaves it; the first touchedAt(n) are overdue. */
function rowsOf(n: number, overdue: number) {
  const farAhead = new Date(Date.now() + 7 * 86_400_000).toISOString();
  const past = new Date(Date.now() - 60_000).toISOString();
  const sessions: string[][] = [];
  const approvals: Array<Array<string | null>> = [];
  for (let i = 0; i < n; i++) {
    const session = `s-${i}`;
    const customer = `c-${i % 500}`;
    sessions.push([
      session,
      'bookstore',
      customer,
      createdAt(i),
      createdAt(i),
      '{"messageSeq":0,"calls":[]}',
    ]);
    approvals.push([
      id(i),
      session,
      'bookstore',
      `call-${i}`,
      tools[i % 3] ?? 'refund',
      `{"orderId":${i}}`,
      '0'.repeat(64),
      `Cancel order ${i} for customer ${customer}.`,
      createdAt(i),
      i < overdue ? past : farAhead,
      'pending',
      customer,
    ]);
  }
  return { sessions, approvals };
}

const SESSION_INSERT = 'id, agent, principal, created_at, updated_at, message_count, batch';
const APPROVAL_INSERT =
  'id, session, agent, call_id, tool, args_json, args_hash, effect, created_at, expires_at, status, customer';

function fillSqlite(path: string, n: number, overdue: number): void {
  const { sessions, approvals } = rowsOf(n, overdue);
  const db = new DatabaseSync(path);
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec('BEGIN IMMEDIATE');
  const session = db.prepare(`INSERT INTO sessions (${SESSION_INSERT}) VALUES (?, ?, ?, ?, ?, 1, ?)`);
  const approval = db.prepare(
    `INSERT INTO approvals (${APPROVAL_INSERT}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  for (const row of sessions) session.run(...row);
  for (const row of approvals) approval.run(...row);
  db.exec('COMMIT');
  db.exec('ANALYZE');
  db.close();
}

async function fillPostgres(schema: string, n: number, overdue: number): Promise<void> {
  const { sessions, approvals } = rowsOf(n, overdue);
  const columns = (rows: Array<Array<string | null>>, width: number) =>
    Array.from({ length: width }, (_, c) => rows.map((row) => row[c] ?? null));
  await admin(async (client) => {
    await client.query('BEGIN');
    // The continue_due triggers are off for the fill (replica role) and the flag is set the way
    // the migration sets it: row by row at COMMIT they would each plan against tables whose
    // statistics still say empty. One session per transaction, as agents write, is what the
    // triggers are for (and what the decide and expire figures below go through).
    await client.query('SET LOCAL session_replication_role = replica');
    for (let start = 0; start < n; start += 10_000) {
      const s = sessions.slice(start, start + 10_000);
      await client.query(
        `INSERT INTO "${schema}".sessions (${SESSION_INSERT})
         SELECT a, b, c, d, e, 1, f FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS t(a, b, c, d, e, f)`,
        columns(s, 6),
      );
      const a = approvals.slice(start, start + 10_000);
      await client.query(
        `INSERT INTO "${schema}".approvals (${APPROVAL_INSERT})
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
           $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])`,
        columns(a, 12),
      );
    }
    await client.query(
      `UPDATE "${schema}".sessions s SET continue_due = true WHERE s.batch IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM "${schema}".approvals a WHERE a.session = s.id AND a.status = 'pending')`,
    );
    await client.query('COMMIT');
    await client.query(`ANALYZE "${schema}".sessions`);
    await client.query(`ANALYZE "${schema}".approvals`);
  });
}

interface Opened {
  store: Store;
  /** Rows the database read on this store's tables so far (PostgreSQL's statistics), else null. */
  rowsRead: () => Promise<number | null>;
  /**
   * The page of `query` as it was before the text indexes, `repeats` times: the same
   * statement walked along the ordered index (SQLite: not narrowed; PostgreSQL: with the two
   * trigram indexes dropped in a transaction that is rolled back, so the planner also loses
   * their statistics, as before migration 016). Rows not decoded. With the rows it found.
   */
  walked: (query: RequestPageQuery, repeats: number) => Promise<{ rows: number; timing: Timing }>;
  /** Bytes of the text index (FTS5's segments; the two GIN indexes). */
  textIndexBytes: () => Promise<number>;
  close: () => Promise<void>;
}

async function open(backend: Backend, n: number, fill = true, overdue = touchedAt(n)): Promise<Opened> {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-flat-'));
    const path = join(dir, 'store.db');
    await createSqliteStore({ path }).close();
    if (fill) fillSqlite(path, n, overdue);
    const store = createSqliteStore({ path });
    const raw = new DatabaseSync(path);
    return {
      store,
      rowsRead: async () => null,
      walked: async (query, repeats) => {
        const { page } = requestPageSql(SQLITE_PAGE_DIALECT, planPage(query));
        const statement = raw.prepare(page.text);
        const rows = Math.min(statement.all(...page.values).length, query.limit);
        return { rows, timing: await timed(async () => statement.all(...page.values), repeats) };
      },
      textIndexBytes: async () =>
        Number(
          (
            raw
              .prepare(
                'SELECT (SELECT sum(length(block)) FROM approvals_search_data) + (SELECT count(*) * 16 FROM approvals_search_idx) AS n',
              )
              .get() as { n: number }
          ).n,
        ),
      close: async () => {
        raw.close();
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = `cs_bench_flat_${randomBytes(4).toString('hex')}`;
  await (await createPostgresStore({ connectionString: BENCH_PG_URL, schema })).close();
  if (fill) await fillPostgres(schema, n, overdue);
  const store = await createPostgresStore({ connectionString: BENCH_PG_URL, schema });
  return {
    store,
    rowsRead: () =>
      admin(async (client) => {
        // Counters are flushed at transaction end; a brief pause lets the last ones land.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const result = await client.query<{ n: string }>(
          `SELECT COALESCE(SUM(seq_tup_read + COALESCE(idx_tup_fetch, 0)), 0)::bigint AS n
           FROM pg_stat_user_tables WHERE schemaname = $1`,
          [schema],
        );
        return Number(result.rows[0]?.n ?? 0);
      }),
    walked: async (query, repeats) => {
      const { page } = requestPageSql(postgresPageDialect(tablesIn(schema).approvals), planPage(query));
      const walker = new pg.Client({ connectionString: BENCH_PG_URL });
      await walker.connect();
      try {
        await walker.query('BEGIN');
        await walker.query(
          `DROP INDEX "${schema}".approvals_effect_trgm, "${schema}".approvals_customer_trgm`,
        );
        const run = async () => (await walker.query(page.text, page.values)).rows.length;
        const rows = Math.min(await run(), query.limit);
        return { rows, timing: await timed(run, repeats) };
      } finally {
        await walker.query('ROLLBACK');
        await walker.end();
      }
    },
    textIndexBytes: () =>
      admin(async (client) => {
        const result = await client.query<{ n: string }>(
          `SELECT sum(pg_relation_size(format('%I.%I', $1::text, name)))::bigint AS n
           FROM unnest(ARRAY['approvals_effect_trgm', 'approvals_customer_trgm']) AS name`,
          [schema],
        );
        return Number(result.rows[0]?.n ?? 0);
      }),
    close: async () => {
      await store.close();
      await admin((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    },
  };
}

interface Timing {
  /** Median wall time, ms. */
  ms: number;
  /** Mean CPU of this process per run, µs (PostgreSQL's own CPU is not in it). */
  cpuUs: number;
}

async function timed(work: () => Promise<unknown>, repeats = REPEATS): Promise<Timing> {
  for (let i = 0; i < 10; i++) await work();
  const wall: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < repeats; i++) {
    const start = performance.now();
    await work();
    wall.push(performance.now() - start);
  }
  const used = process.cpuUsage(cpu);
  wall.sort((a, b) => a - b);
  return {
    ms: round(wall[Math.floor(wall.length / 2)] ?? 0, 3),
    cpuUs: Math.round((used.user + used.system) / repeats),
  };
}

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

function appWith(store: Store, watchIntervalMs = 0) {
  return createServer({
    agents: [bookstoreAgent.with({ model: createDemoModel() })],
    store,
    approvers: [{ name: 'alice', roles: ['support', 'manager'], token: 'alice-token-0123456789' }],
    log: () => undefined,
    watchIntervalMs,
  });
}
const auth = { headers: { authorization: 'Bearer alice-token-0123456789' } };

export interface FlatRow {
  backend: Backend;
  waiting: number;
  firstPage: Timing;
  deepPage: Timing;
  countedPage: Timing;
  textPage: Timing;
  httpFirstPage: Timing;
  /** What GET /v1/approvals?limit=1 did before: every pending row read, then cut. */
  loadAllThenCut: Timing;
  decideMs: number;
  decideCpuUs: number;
  expireMs: number;
  expireCpuUs: number;
  stalledSweep: Timing;
}

async function measureSize(backend: Backend, n: number): Promise<FlatRow> {
  const opened = await open(backend, n);
  const { store } = opened;
  try {
    const pending: RequestPageQuery = { status: 'pending', limit: PAGE, openAt: new Date().toISOString() };
    const deep = Math.floor(n * 0.9);
    const after = encodeCursor(
      { id: id(deep), createdAt: createdAt(deep) } as ApprovalRequest,
      planPage(pending),
    );
    const firstPage = await timed(() => store.pageRequests(pending));
    const deepPage = await timed(() => store.pageRequests({ ...pending, after }));
    const countedPage = await timed(() => store.pageRequests({ ...pending, count: true }));
    // Matches one customer in 500: the walk reads about 500 × PAGE rows to fill a page.
    const textPage = await timed(() => store.pageRequests({ ...pending, text: 'customer c-7.' }), 10);
    const { app } = appWith(store);
    const httpFirstPage = await timed(async () => {
      const response = await app.request('/v1/requests?status=pending&limit=50', auth);
      if (response.status !== 200) throw new Error(`list: ${response.status}`);
      await response.arrayBuffer();
    });
    const loadAllThenCut = await timed(
      async () => (await store.listApprovals({ status: 'pending' })).slice(0, 1),
      n >= 100_000 ? 3 : 10,
    );
    const stalledSweep = await timed(() =>
      store.listStalledSessions({ nowMs: Date.now(), limit: 50, agents: ['bookstore'], includeHeld: true }),
    );

    // Decided: TOUCHED requests from the middle of the backlog, one compare-and-set each with
    // its audit entry (what every decision path ends in).
    const decideCpu = process.cpuUsage();
    const decideStart = performance.now();
    const touched = touchedAt(n);
    for (let i = 0; i < touched; i++) {
      const target = id(touched + Math.floor(((n - touched) * i) / touched));
      const at = new Date().toISOString();
      const outcome = await store.decide(
        target,
        { verdict: 'approved', by: 'alice', reason: null, at, kind: 'person' },
        [
          {
            kind: 'request.decided',
            session: null,
            requestId: target,
            actor: 'alice',
            data: { verdict: 'approved', reason: null, tool: 'refund', args: '{}', argsHash: '0'.repeat(64) },
          },
        ],
      );
      if (!outcome.won) throw new Error(`decide ${target} lost`);
    }
    const decideMs = (performance.now() - decideStart) / touched;
    const decideUsed = process.cpuUsage(decideCpu);
    // Expired: the sweep's own loop (the due-query, then the expiry CAS per request).
    const expireCpu = process.cpuUsage();
    const expireStart = performance.now();
    let expired = 0;
    for (;;) {
      const at = new Date().toISOString();
      const due = await store.listDue({ at, limit: 100, kind: 'tool-call' });
      if (due.length === 0) break;
      for (const request of due) {
        const outcome = await store.decide(
          request.id,
          { verdict: 'expired', by: 'countersign', reason: 'expired', at, kind: 'expiry' },
          [
            {
              kind: 'request.expired',
              session: null,
              requestId: request.id,
              actor: 'countersign',
              data: { expiresAt: at },
            },
          ],
        );
        if (outcome.won) expired += 1;
      }
    }
    if (expired !== touched) throw new Error(`expired ${expired}, expected ${touched}`);
    const expireMs = (performance.now() - expireStart) / touched;
    const expireUsed = process.cpuUsage(expireCpu);
    return {
      backend,
      waiting: n,
      firstPage,
      deepPage,
      countedPage,
      textPage,
      httpFirstPage,
      loadAllThenCut,
      decideMs: round(decideMs, 3),
      decideCpuUs: Math.round((decideUsed.user + decideUsed.system) / touched),
      expireMs: round(expireMs, 3),
      expireCpuUs: Math.round((expireUsed.user + expireUsed.system) / touched),
      stalledSweep,
    };
  } finally {
    await opened.close();
  }
}

export interface TextRow {
  backend: Backend;
  waiting: number;
  /** "customer c-7.": one customer in 500, through the index. */
  rare: Timing;
  /** The same page walked as before the index (same statement, the index not used). */
  rareWalked: Timing;
  /** …with the capped count. */
  rareCounted: Timing;
  /** The page after it, from its cursor. */
  rareNext: Timing;
  /** "4242": part of an order number, about 1 in 5,000, with no trigram common to every row. */
  number: Timing;
  /** "customer c-": in every row; walked, a page at once. */
  common: Timing;
  /** "customer x-7.": in no row. */
  none: Timing;
  /** "zq": in no row and under three characters, so no trigram: the walk reads every row. */
  shortNone: Timing;
  indexBytes: number;
}

/** Text search at size n: the needles above, through the store and, for one, walked. */
async function measureText(backend: Backend, n: number): Promise<TextRow> {
  const opened = await open(backend, n);
  const { store } = opened;
  try {
    const pending: RequestPageQuery = { status: 'pending', limit: PAGE };
    const rareQuery = { ...pending, text: 'customer c-7.' };
    const first = await store.pageRequests(rareQuery);
    const found = first.items.length;
    const walked = await opened.walked(rareQuery, n >= 100_000 ? 10 : REPEATS);
    if (found !== Math.min(PAGE, Math.ceil((n - 7) / 500)) || walked.rows !== found)
      throw new Error(`the text page found ${found}, the walk ${walked.rows}`);
    const after = first.next ?? '';
    return {
      backend,
      waiting: n,
      rare: await timed(() => store.pageRequests(rareQuery)),
      rareWalked: walked.timing,
      rareCounted: await timed(() => store.pageRequests({ ...rareQuery, count: true })),
      rareNext: await timed(() => store.pageRequests(after === '' ? rareQuery : { ...rareQuery, after })),
      number: await timed(() => store.pageRequests({ ...pending, text: '4242' })),
      common: await timed(() => store.pageRequests({ ...pending, text: 'customer c-' })),
      none: await timed(() => store.pageRequests({ ...pending, text: 'customer x-7.' })),
      shortNone: await timed(
        () => store.pageRequests({ ...pending, text: 'zq' }),
        n >= 100_000 ? 10 : REPEATS,
      ),
      indexBytes: await opened.textIndexBytes(),
    };
  } finally {
    await opened.close();
  }
}

export interface IdleRow {
  backend: Backend;
  waiting: number;
  seconds: number;
  /** CPU of the server process per second of idling, ms. */
  cpuMsPerSecond: number;
  /** Rows the database read per idle second on the store's tables (PostgreSQL statistics). */
  rowsReadPerSecond: number | null;
}

/** A real server (store watcher every 2 s, as `serve` runs it) idling over a full backlog. */
async function measureIdle(backend: Backend, n: number): Promise<IdleRow> {
  // Nothing overdue: an idle server has nothing to expire. (The overdue rows of the other
  // sections belong to sessions whose batch is a stand-in that never names them, so the
  // stalled sweep would continue 50 of them every pass, forever, and be measured instead.)
  const opened = await open(backend, n, true, 0);
  try {
    const server = appWith(opened.store, 2000);
    // Past start-up: the watcher's first pass.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const rowsBefore = await opened.rowsRead();
    const cpu = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
    const used = process.cpuUsage(cpu);
    const rowsAfter = await opened.rowsRead();
    await server.close();
    return {
      backend,
      waiting: n,
      seconds: IDLE_SECONDS,
      cpuMsPerSecond: round((used.user + used.system) / 1000 / IDLE_SECONDS, 3),
      rowsReadPerSecond:
        rowsBefore === null || rowsAfter === null ? null : round((rowsAfter - rowsBefore) / IDLE_SECONDS, 1),
    };
  } finally {
    await opened.close();
  }
}

export interface StatsRow {
  backend: Backend;
  decided: number;
  stats: Timing;
}

/** /v1/stats over a window holding STATS_DECIDED decided rows. */
async function measureStats(backend: Backend): Promise<StatsRow> {
  const n = STATS_DECIDED;
  const opened = await open(backend, 0, false);
  const people = ['alice', 'mia', 'bob', 'ana'];
  const decidedAt = (i: number) => new Date(base + i * 10 + 5000 + (i % 97) * 1000).toISOString();
  const values = Array.from({ length: n }, (_, i) => {
    const status = i % 10 === 0 ? 'rejected' : i % 25 === 0 ? 'expired' : 'approved';
    const kind = status === 'expired' ? 'expiry' : 'person';
    const by = status === 'expired' ? 'countersign' : (people[i % 4] ?? 'alice');
    const at = decidedAt(i);
    const decision = JSON.stringify({
      verdict: status,
      by,
      reason: status === 'rejected' ? `reason ${i % 7}` : null,
      at,
      kind,
    });
    return [
      id(i),
      `s-${i}`,
      'bookstore',
      `call-${i}`,
      tools[i % 3] ?? 'refund',
      `{"orderId":${i}}`,
      '0'.repeat(64),
      `Order ${i}.`,
      createdAt(i),
      new Date(Date.now() + 86_400_000).toISOString(),
      status,
      decision,
      at,
      by,
      kind,
      i % 2 === 0 ? 'manager' : null,
    ];
  });
  const columns = `${APPROVAL_INSERT.replace(', customer', '')}, decision, decided_at, decided_by, decided_kind, required_role`;
  try {
    if (backend === 'sqlite') {
      const path = (opened.store as unknown as { path: string }).path;
      const db = new DatabaseSync(path);
      db.exec('BEGIN IMMEDIATE');
      const insert = db.prepare(
        `INSERT INTO approvals (${columns}) VALUES (${columns
          .split(',')
          .map(() => '?')
          .join(', ')})`,
      );
      for (const row of values) insert.run(...row);
      db.exec('COMMIT');
      db.exec('ANALYZE');
      db.close();
    } else {
      const schema = (opened.store as unknown as { schema: string }).schema;
      await admin(async (client) => {
        for (let start = 0; start < n; start += 10_000) {
          const chunk = values.slice(start, start + 10_000);
          const width = columns.split(',').length;
          await client.query(
            `INSERT INTO "${schema}".approvals (${columns}) SELECT * FROM unnest(${Array.from({ length: width }, (_, c) => `$${c + 1}::text[]`).join(', ')})`,
            Array.from({ length: width }, (_, c) => chunk.map((row) => row[c] ?? null)),
          );
        }
        await client.query(`ANALYZE "${schema}".approvals`);
      });
    }
    const window = {
      since: new Date(base - 1000).toISOString(),
      until: new Date(Date.now() + 3_600_000).toISOString(),
    };
    const check = await opened.store.decisionStats(window);
    if (check.decided.approved + check.decided.rejected + check.decided.expired !== n)
      throw new Error(`stats counted ${JSON.stringify(check.decided)} of ${n}`);
    return { backend, decided: n, stats: await timed(() => opened.store.decisionStats(window), 5) };
  } finally {
    await opened.close();
  }
}

export async function benchFlatCost(
  onSection: (partial: FlatResult) => void = () => undefined,
): Promise<FlatResult> {
  const backends: Backend[] = [];
  for (const backend of BACKENDS) {
    if (backend === 'postgres') {
      const problem = await postgresProblem();
      if (problem !== null) {
        console.log(`flat-cost: PostgreSQL skipped (${problem})`);
        continue;
      }
    }
    backends.push(backend);
  }
  const result: FlatResult = { rows: [], text: [], idle: [], stats: [] };
  const only = process.env.FLAT_ONLY?.split(',');
  const runs = (section: string) => only === undefined || only.includes(section);
  if (runs('sizes'))
    for (const backend of backends)
      for (const n of SIZES) {
        result.rows.push(await measureSize(backend, n));
        onSection(result);
      }
  if (runs('text'))
    for (const backend of backends)
      for (const n of SIZES) {
        result.text.push(await measureText(backend, n));
        onSection(result);
      }
  const largest = Math.max(...SIZES);
  if (runs('idle'))
    for (const backend of backends) {
      result.idle.push(await measureIdle(backend, largest));
      onSection(result);
    }
  if (runs('stats'))
    for (const backend of backends) {
      result.stats.push(await measureStats(backend));
      onSection(result);
    }
  return result;
}

export interface FlatResult {
  rows: FlatRow[];
  text: TextRow[];
  idle: IdleRow[];
  stats: StatsRow[];
}

export function printFlatCost(result: FlatResult): void {
  console.log(
    `\nCost per request listed, decided and expired, by requests waiting (median of ${REPEATS}; CPU µs of this process)\n`,
  );
  const smallest = new Map<Backend, FlatRow>();
  for (const row of result.rows) if (!smallest.has(row.backend)) smallest.set(row.backend, row);
  console.table(
    result.rows.map((row) => {
      const first = smallest.get(row.backend) ?? row;
      return {
        store: row.backend,
        waiting: row.waiting,
        'page 1 ms': row.firstPage.ms,
        'page 1 µs CPU': row.firstPage.cpuUs,
        'deep page ms': row.deepPage.ms,
        'counted page ms': row.countedPage.ms,
        'text page ms': row.textPage.ms,
        'HTTP page ms': row.httpFirstPage.ms,
        'page 1 vs first size': `${round(row.firstPage.ms / first.firstPage.ms)}×`,
        'load-all-then-cut ms': row.loadAllThenCut.ms,
        'decide ms': row.decideMs,
        'decide µs CPU': row.decideCpuUs,
        'expire ms': row.expireMs,
        'expire µs CPU': row.expireCpuUs,
        'stalled sweep ms': row.stalledSweep.ms,
      };
    }),
  );
  console.log(
    `\nText search, a page of ${PAGE} pending requests (median of ${REPEATS}; 10 for the walks at 100,000)\n`,
  );
  console.table(
    result.text.map((row) => ({
      store: row.backend,
      waiting: row.waiting,
      '1 in 500 ms': row.rare.ms,
      'walked (before) ms': row.rareWalked.ms,
      'counted ms': row.rareCounted.ms,
      'next page ms': row.rareNext.ms,
      '"4242" ms': row.number.ms,
      'in every row ms': row.common.ms,
      'in none ms': row.none.ms,
      '2 letters, none ms': row.shortNone.ms,
      'µs CPU (1 in 500)': row.rare.cpuUs,
      'index MB': round(row.indexBytes / 1_048_576),
    })),
  );
  console.log('\nAn idle server (the store watcher as serve runs it) over the largest backlog\n');
  console.table(
    result.idle.map((row) => ({
      store: row.backend,
      waiting: row.waiting,
      seconds: row.seconds,
      'server CPU ms/s': row.cpuMsPerSecond,
      'rows read by the database /s': row.rowsReadPerSecond ?? '-',
    })),
  );
  console.log('\n/v1/stats over a window of decided requests\n');
  console.table(
    result.stats.map((row) => ({
      store: row.backend,
      decided: row.decided,
      'stats ms': row.stats.ms,
      'µs CPU': row.stats.cpuUs,
    })),
  );
}

if (import.meta.main) {
  const outDir = join(import.meta.dirname, 'results');
  mkdirSync(outDir, { recursive: true });
  const at = new Date().toISOString();
  const file = join(outDir, `flat-cost-${at.replace(/[:.]/g, '-')}.json`);
  // Written after every measurement, so a long run that is stopped keeps what it measured.
  const save = (partial: FlatResult) =>
    writeFileSync(
      file,
      `${JSON.stringify({ name: 'flat-cost', at, node: process.version, ...partial }, null, 2)}\n`,
    );
  const result = await benchFlatCost((partial) => {
    save(partial);
    console.log(
      `flat-cost: ${partial.rows.length} sizes, ${partial.text.length} text, ${partial.idle.length} idle, ${partial.stats.length} stats measured`,
    );
  });
  save(result);
  printFlatCost(result);
  console.log(`\nWrote ${file}`);
}
