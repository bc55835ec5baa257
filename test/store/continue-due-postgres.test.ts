import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL, withAdmin } from '../helpers/postgres.ts';

const url = await postgresForTests();

/**
 * The stalled-session flag `sessions.continue_due` (migrations 014 and 017) as PostgreSQL keeps
 * it. The sweep checks the definition again, so a wrong flag would show up only as cost: a
 * session left flagged after it continued stays in the partial index and is walked by every
 * sweep. Here the flag itself is read, and the row versions a change costs are counted
 * (pg_stat_xact_user_tables, with the deferred triggers fired inside the transaction).
 */
describe.skipIf(url === null)('PostgreSQL: the continue-due flag', () => {
  const schema = freshSchema('due');
  const sessions = `"${schema}".sessions`;

  beforeAll(async () => {
    const store = await createPostgresStore({
      connectionString: url ?? TEST_PG_URL,
      schema,
      liveness: false,
    });
    await store.close();
  });
  afterAll(async () => {
    await dropSchema(schema);
  });

  const flag = (id: string) =>
    withAdmin(
      async (client) =>
        (await client.query(`SELECT continue_due FROM ${sessions} WHERE id = $1`, [id])).rows[0]
          ?.continue_due,
    );

  /** Runs `statement` and its deferred triggers; the row versions it wrote in sessions. */
  const versionsWritten = (statement: string, values: unknown[]) =>
    withAdmin(async (client) => {
      await client.query('BEGIN');
      try {
        await client.query(statement, values);
        await client.query('SET CONSTRAINTS ALL IMMEDIATE');
        const { rows } = await client.query(
          'SELECT n_tup_upd::int AS updated FROM pg_stat_xact_user_tables WHERE relid = $1::regclass',
          [sessions],
        );
        await client.query('COMMIT');
        return rows[0]?.updated as number;
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    });

  it('a batch with nothing pending is due; closing it clears the flag in the same row version', async () => {
    await withAdmin((client) =>
      client.query(
        `INSERT INTO ${sessions} (id, agent, created_at, updated_at, batch) VALUES ('s1', 'a', 't', 't', 'b1')`,
      ),
    );
    expect(await flag('s1')).toBe(true);
    // 014's deferred trigger wrote the row a second time here: 2 versions instead of 1.
    expect(await versionsWritten(`UPDATE ${sessions} SET batch = NULL WHERE id = $1`, ['s1'])).toBe(1);
    expect(await flag('s1')).toBeNull();
  });

  it('a batch opened again is due again, whatever clears it next', async () => {
    await withAdmin((client) =>
      client.query(
        `INSERT INTO ${sessions} (id, agent, created_at, updated_at, batch) VALUES ('s2', 'a', 't', 't', NULL)`,
      ),
    );
    expect(await flag('s2')).toBeNull();
    await versionsWritten(`UPDATE ${sessions} SET batch = 'b1' WHERE id = $1`, ['s2']);
    expect(await flag('s2')).toBe(true);
    // Open, then close, in one transaction: the deferred check sees the final row, closed.
    await withAdmin(async (client) => {
      await client.query('BEGIN');
      await client.query(`UPDATE ${sessions} SET batch = 'b2' WHERE id = 's2'`);
      await client.query(`UPDATE ${sessions} SET batch = NULL WHERE id = 's2'`);
      await client.query('COMMIT');
    });
    expect(await flag('s2')).toBeNull();
    // A write that leaves the batch alone leaves the flag alone.
    await versionsWritten(`UPDATE ${sessions} SET batch = 'b3' WHERE id = $1`, ['s2']);
    await withAdmin((client) => client.query(`UPDATE ${sessions} SET updated_at = 'u' WHERE id = 's2'`));
    expect(await flag('s2')).toBe(true);
  });
});
