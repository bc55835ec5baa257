import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { bookstore } from '../helpers/bookstore-agent.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL, withAdmin } from '../helpers/postgres.ts';

const pg = await postgresForTests();

/** The /metrics gauge's count: waiting requests only, whatever has been decided. */
async function countsWaiting(store: Store) {
  expect(await store.countPending?.()).toBe(0);
  const { agent } = bookstore({ store });
  const first = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
  await agent.chat('s2', 'Please cancel my order 1044.', { principal: 'c-100' });
  expect(await store.countPending?.()).toBe(2);
  await agent.decide(first.approvals[0]!.id, { approved: false, by: 'alice' });
  expect(await store.countPending?.()).toBe(1);
}

describe('countPending', () => {
  it('memory', async () => {
    await countsWaiting(createMemoryStore());
  });

  it('SQLite counts from the partial index of pending rows, not the table', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'countersign-count-')), 'store.db');
    const store = createSqliteStore({ path });
    try {
      await countsWaiting(store);
      const db = new DatabaseSync(path);
      const plan = db
        .prepare(
          "EXPLAIN QUERY PLAN SELECT COUNT(*) AS n FROM approvals INDEXED BY approvals_due WHERE status = 'pending'",
        )
        .all() as Array<{ detail: string }>;
      db.close();
      expect(plan.map((row) => row.detail).join(' ')).toMatch(/USING COVERING INDEX approvals_due/);
    } finally {
      await store.close();
    }
  });

  describe.skipIf(pg === null)('PostgreSQL', () => {
    const schema = freshSchema('count_pending');
    afterAll(async () => {
      await dropSchema(schema);
    });

    it('counts waiting requests; the planner may use the partial index approvals_due', async () => {
      const store = await createPostgresStore({ connectionString: TEST_PG_URL, schema });
      try {
        await countsWaiting(store);
        const plan = await withAdmin(async (client) => {
          await client.query('SET enable_seqscan = off');
          const rows = await client.query(
            `EXPLAIN SELECT COUNT(*)::int AS n FROM "${schema}".approvals WHERE status = 'pending'`,
          );
          return rows.rows.map((row: Record<string, string>) => Object.values(row)[0]).join('\n');
        });
        expect(plan).toMatch(/approvals_due|approvals_by_status/);
      } finally {
        await store.close();
      }
    });
  });
});
