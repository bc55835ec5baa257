import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { bookstoreAgent } from '../../../examples/bookstore/app.ts';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  TEST_PG_URL,
  withAdmin,
} from '../../../test/helpers/postgres.ts';
import type { ApprovalRequest } from '../../core/approval.ts';
import { createDemoModel } from '../../model/demo-model.ts';
import { createServer } from '../../server/create-server.ts';
import { encodeCursor, planPage } from '../request-page.ts';
import { requestPageSql } from '../sql/request-page-sql.ts';
import type { RequestPageQuery } from '../store.ts';
import { postgresPageDialect } from './page-requests.ts';
import { createPostgresStore, type PostgresStore } from './postgres-store.ts';
import { tablesIn } from './schema-name.ts';
import { TEXT_SEARCH_INDEXES } from './text-search.ts';

const url = await postgresForTests();

const createdAt = (i: number) => new Date(Date.UTC(2030, 0, 1) + i * 1000).toISOString();

/**
 * `n` waiting requests as the bench writes them: one customer in 500 per needle
 * "customer c-7.", every row holding "customer c-".
 */
async function fill(client: pg.Client, schema: string, n: number): Promise<void> {
  await client.query(
    `INSERT INTO "${schema}".approvals (id, session, agent, call_id, tool, args_json, args_hash, effect,
       created_at, expires_at, status, customer)
     SELECT 'apr-' || lpad(i::text, 7, '0'), 's-' || i, 'bookstore', 'call-' || i, 'refund', '{}', repeat('0', 64),
       'Cancel order ' || i || ' for customer c-' || (i % 500) || '.',
       to_char(timestamp '2030-01-01' + i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS".000Z"'),
       '2099-01-01T00:00:00.000Z', 'pending', 'c-' || (i % 500)
     FROM generate_series(0, $1::integer - 1) AS i`,
    [n],
  );
  await client.query(`ANALYZE "${schema}".approvals`);
}

/** The plans of a page and its count, as PostgreSQL chooses them with the table's statistics. */
async function plans(client: pg.Client, schema: string, query: RequestPageQuery) {
  const { page, count } = requestPageSql(
    postgresPageDialect(tablesIn(schema).approvals),
    planPage({ ...query, count: true }),
  );
  const explain = async (text: string, values: unknown[]) =>
    (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values)).rows
      .map((row) => row['QUERY PLAN'])
      .join('\n');
  return {
    page: await explain(page.text, page.values),
    count: await explain(count?.text ?? '', count?.values ?? []),
  };
}

describe.skipIf(url === null)('PostgreSQL text search', () => {
  const connectionString = url ?? TEST_PG_URL;
  const opened: PostgresStore[] = [];
  const schemas: string[] = [];

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(schema);
  });

  it('finds a rare needle through the trigram indexes, and walks the list for one in every row', async () => {
    const schema = freshSchema('trgm_plan');
    schemas.push(schema);
    const store = await createPostgresStore({ connectionString, schema });
    opened.push(store);
    expect(store.textSearch).toEqual({ indexed: true });
    const pending: RequestPageQuery = { status: 'pending', limit: 50 };
    // Bound to the page it is used with: pending, this text, newest first.
    const after = encodeCursor(
      { id: 'apr-0010000', createdAt: createdAt(10_000) } as ApprovalRequest,
      planPage({ ...pending, text: 'CUSTOMER C-7.', sort: 'newest' }),
    );
    await withAdmin(async (client) => {
      await fill(client, schema, 20_000);
      // 40 of 20,000: both trigram indexes (the effect, the customer), then a sort of what they found.
      for (const query of [
        { ...pending, text: 'customer c-7.' },
        { ...pending, text: 'CUSTOMER C-7.', sort: 'newest' as const, after },
        { sort: 'expiring' as const, limit: 50, text: 'customer c-7.' },
      ]) {
        const { page, count } = await plans(client, schema, query);
        expect(page, JSON.stringify(query)).toMatch(/Bitmap Index Scan on approvals_effect_trgm/);
        expect(page, JSON.stringify(query)).toMatch(/Bitmap Index Scan on approvals_customer_trgm/);
        expect(page, JSON.stringify(query)).not.toMatch(/Seq Scan/);
        expect(count, JSON.stringify(query)).toMatch(/approvals_effect_trgm/);
      }
      // A rare customer: its own index.
      const customer = await plans(client, schema, { ...pending, customer: 'c-499' });
      expect(customer.page).toMatch(/Bitmap Index Scan on approvals_customer_trgm/);
      expect(customer.page).not.toMatch(/approvals_effect_trgm|Seq Scan/);
      // In every row: the ordered walk fills a page at once, as before.
      const common = await plans(client, schema, { ...pending, text: 'customer c-' });
      // (every row is pending here, so the index of all rows by creation is as good)
      expect(common.page).toMatch(/Index Scan using approvals_by_(status|created) on approvals/);
      expect(common.page).not.toMatch(/trgm|Sort/);
    });
    // And the page is the walk's: the same rows in the same order, page after page.
    const ids = async (query: RequestPageQuery) => {
      const found: string[] = [];
      let next: string | null = null;
      do {
        const page = await store.pageRequests({ ...query, ...(next === null ? {} : { after: next }) });
        found.push(...page.items.map((item) => item.id));
        next = page.next;
      } while (next !== null);
      return found;
    };
    const expected = Array.from({ length: 40 }, (_, k) => `apr-${String(7 + 500 * k).padStart(7, '0')}`);
    expect(await ids({ ...pending, limit: 7, text: 'Customer C-7.' })).toEqual(expected);
    expect(await ids({ limit: 9, sort: 'newest', text: 'customer c-7.' })).toEqual([...expected].reverse());
    expect((await store.pageRequests({ ...pending, text: 'customer c-7.', count: true })).total).toEqual({
      count: 40,
      exact: true,
    });
  });

  it('plans a text page for its needle every time: the tenth run of a needle in no row still takes the index', async () => {
    const schema = freshSchema('trgm_custom');
    schemas.push(schema);
    await (await createPostgresStore({ connectionString, schema })).close();
    await withAdmin((client) => fill(client, schema, 10_000));
    // A pool of one: every page runs on the same connection. A statement prepared there keeps,
    // after five runs, a generic plan made without the needle if that one looks cheaper, and
    // without the needle PostgreSQL walks (it did here, and every needle then walked).
    const store = await createPostgresStore({ connectionString, schema, pool: { max: 1 } });
    const pending: RequestPageQuery = { status: 'pending', limit: 50 };
    // In no row: the index answers at once; walked, every row is read.
    for (let i = 0; i < 10; i++) await store.pageRequests({ ...pending, text: 'customer x-7.' });
    // Its backend reports its index scans when it ends.
    await store.close();
    const scans = () =>
      withAdmin(async (client) => {
        const { rows } = await client.query<{ n: string }>(
          `SELECT idx_scan AS n FROM pg_stat_user_indexes WHERE schemaname = $1 AND indexrelname = 'approvals_effect_trgm'`,
          [schema],
        );
        return Number(rows[0]?.n ?? 0);
      });
    const deadline = Date.now() + 10_000;
    let seen = await scans();
    while (seen < 10 && Date.now() < deadline) seen = await scans();
    expect(seen).toBe(10);
  });

  describe('in a database without pg_trgm, for a role that may not install it', () => {
    const database = `cs_test_notrgm_${randomBytes(4).toString('hex')}`;
    const role = `cs_test_role_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    /** The test server's URL on the new database, as its own user or as `user`. */
    const at = (user?: { name: string; password: string }) => {
      const target = new URL(connectionString);
      if (user !== undefined) {
        target.username = user.name;
        target.password = user.password;
      }
      target.pathname = `/${database}`;
      return target.toString();
    };
    const asRole = { name: role, password };
    const inDatabase = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
      const client = new pg.Client({ connectionString: at() });
      await client.connect();
      try {
        return await work(client);
      } finally {
        await client.end();
      }
    };

    afterAll(async () => {
      await withAdmin(async (client) => {
        await client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
        await client.query(`DROP ROLE IF EXISTS "${role}"`);
      });
    });

    it('migrates without the index, walks with the same answers, says so once, and indexes after an administrator installs pg_trgm', async () => {
      await withAdmin(async (client) => {
        // template0: nothing installed, whatever template1 holds on this server.
        await client.query(`CREATE DATABASE "${database}" TEMPLATE template0`);
        // No CREATE on the database (PUBLIC has CONNECT and TEMPORARY only), so no trusted
        // extension either: only a schema of its own to migrate, as a cautious DBA hands out.
        await client.query(`CREATE ROLE "${role}" LOGIN PASSWORD '${password}'`);
      });
      const schema = 'cs_text';
      await inDatabase(async (client) => {
        await client.query(`CREATE SCHEMA ${schema} AUTHORIZATION "${role}"`);
        const { rows } = await client.query(`SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'`);
        expect(rows).toEqual([]);
      });
      const store = await createPostgresStore({ connectionString: at(asRole), schema });
      opened.push(store);
      expect(store.textSearch).toMatchObject({
        indexed: false,
        reason: expect.stringMatching(
          /^pg_trgm is not installed and this role could not install it: permission denied/,
        ),
      });
      // The migration ran to its end: the function is there to try again, the indexes are not.
      const version = await store.schemaVersion();
      expect(version.current).toBe(version.known);
      await inDatabase(async (client) => {
        const { rows } = await client.query(
          `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname = ANY($2::text[])`,
          [schema, [...TEXT_SEARCH_INDEXES]],
        );
        expect(rows).toEqual([]);
        await fill(client, schema, 5000);
      });
      // The lists answer as with the index: the walk.
      const found = await store.pageRequests({
        status: 'pending',
        limit: 50,
        text: 'Customer C-7.',
        count: true,
      });
      expect(found.items.map((item) => item.id)).toEqual(
        Array.from({ length: 10 }, (_, k) => `apr-${String(7 + 500 * k).padStart(7, '0')}`),
      );
      expect(found.total).toEqual({ count: 10, exact: true });
      await inDatabase(async (client) => {
        const { page } = await plans(client, schema, { status: 'pending', limit: 50, text: 'customer c-7.' });
        expect(page).not.toMatch(/trgm/);
      });

      // The server says it once, with the reason and what to do.
      const lines: string[] = [];
      const server = createServer({
        agents: [bookstoreAgent.with({ model: createDemoModel() })],
        store,
        log: (line) => lines.push(line),
        watchIntervalMs: 0,
      });
      await server.close();
      expect(lines.filter((line) => line.includes('text search'))).toEqual([
        expect.stringMatching(
          /^countersign: text search .* walks the list on this store: pg_trgm is not installed .*Install pg_trgm .*docs\/deployment-postgres\.md#text-search\.$/,
        ),
      ]);

      // An administrator installs pg_trgm, in a schema of their choosing; the next start builds
      // the indexes under the migration lock, and the planner uses them.
      await inDatabase(async (client) => {
        await client.query('CREATE SCHEMA extensions');
        await client.query('CREATE EXTENSION pg_trgm SCHEMA extensions');
        // The role names the operator class there when it builds the index.
        await client.query(`GRANT USAGE ON SCHEMA extensions TO "${role}"`);
      });
      const again = await createPostgresStore({ connectionString: at(asRole), schema });
      opened.push(again);
      expect(again.textSearch).toEqual({ indexed: true });
      await inDatabase(async (client) => {
        const { page } = await plans(client, schema, { status: 'pending', limit: 50, text: 'customer c-7.' });
        expect(page).toMatch(/Bitmap Index Scan on approvals_effect_trgm/);
      });
      const indexed = await again.pageRequests({ status: 'pending', limit: 50, text: 'Customer C-7.' });
      expect(indexed.items.map((item) => item.id)).toEqual(found.items.map((item) => item.id));
      // A server on it has nothing to say about text search.
      const quiet: string[] = [];
      const second = createServer({
        agents: [bookstoreAgent.with({ model: createDemoModel() })],
        store: again,
        log: (line) => quiet.push(line),
        watchIntervalMs: 0,
      });
      await second.close();
      expect(quiet.filter((line) => line.includes('text search'))).toEqual([]);
    }, 120_000);
  });
});
