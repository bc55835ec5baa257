import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  TEST_PG_URL,
  terminateBackendsWhenBusy,
  withAdmin,
  withApplicationName,
} from '../../../test/helpers/postgres.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { type Connection, createConnection, openPool } from './connection.ts';

const url = await postgresForTests();

/**
 * A transaction's BEGIN goes out with its first statement, and its COMMIT with a statement
 * marked last (connection.ts). These pin what that must not change: the first statement is
 * inside the transaction, a failing last statement commits nothing, and a connection lost
 * once the COMMIT is on the wire reports an unknown outcome, not a rollback.
 */
describe.skipIf(url === null)('PostgreSQL transactions with BEGIN and COMMIT pipelined', () => {
  const schema = freshSchema('pipelined');
  const table = `"${schema}".t`;
  const app = `cs_test_pipe_${randomBytes(4).toString('hex')}`;
  let connection: Connection;

  beforeAll(async () => {
    await withAdmin(async (client) => {
      await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(`CREATE TABLE ${table} (id text PRIMARY KEY)`);
    });
    const pool = await openPool(withApplicationName(url ?? TEST_PG_URL, app), { max: 2 });
    connection = createConnection(pool, 'the test server');
  });
  afterAll(async () => {
    await connection?.close();
    await dropSchema(schema);
  });

  const ids = async () =>
    (await connection.query(`SELECT id FROM ${table} ORDER BY id`)).map((row) => row.id);

  it('a last statement that succeeds commits the transaction with it', async () => {
    await connection.transaction(async (q) => {
      await q(`INSERT INTO ${table} VALUES ('a1')`);
      await q(`INSERT INTO ${table} VALUES ('a2')`, [], { last: true });
    });
    expect(await ids()).toEqual(['a1', 'a2']);
  });

  it('a last statement that fails commits nothing, and the error is its own', async () => {
    const failed = await connection
      .transaction(async (q) => {
        await q(`INSERT INTO ${table} VALUES ('b1')`);
        // 'a1' exists: a unique violation, after the COMMIT was already sent behind it.
        await q(`INSERT INTO ${table} VALUES ('a1')`, [], { last: true });
      })
      .catch((error: unknown) => error);
    expect(CountersignError.is(failed) && failed.code).toBe('INVALID_INPUT');
    expect(((failed as Error).cause as { code?: string }).code).toBe('23505');
    expect(await ids()).not.toContain('b1');
    // The connection went back to the pool clean: the next transaction works.
    await connection.transaction((q) => q(`INSERT INTO ${table} VALUES ('b2')`, [], { last: true }));
    expect(await ids()).toContain('b2');
  });

  it('the first statement is inside the transaction although BEGIN was not waited for', async () => {
    await expect(
      connection.transaction(async (q) => {
        await q(`INSERT INTO ${table} VALUES ('c1')`);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await ids()).not.toContain('c1');
  });

  it('refuses a statement after the one marked last', async () => {
    await expect(
      connection.transaction(async (q) => {
        await q(`INSERT INTO ${table} VALUES ('d1')`, [], { last: true });
        await q(`INSERT INTO ${table} VALUES ('d2')`);
      }),
    ).rejects.toThrow('A statement after the one marked last in its transaction.');
    expect(await ids()).not.toContain('d2');
  });

  it('a connection lost under the last statement says the outcome is unknown; under an earlier one, rolled back', async () => {
    const lostUnder = async (last: boolean) => {
      // Caught at once: the loss may reject it before the admin connection reports back.
      const running = connection
        .transaction(async (q) => {
          await q(`INSERT INTO ${table} VALUES ($1)`, [last ? 'e1' : 'e2']);
          await q(`SELECT pg_sleep(30) AS slept_${last ? 'last' : 'early'}`, [], { last });
          return 'committed';
        })
        .catch((error: unknown) => error);
      const ended = await terminateBackendsWhenBusy(app, { busyWith: 'pg_sleep' });
      expect(ended).toBeGreaterThan(0);
      return running;
    };
    const unknown = await lostUnder(true);
    expect(CountersignError.is(unknown) && unknown.code).toBe('STORE_UNAVAILABLE');
    expect((unknown as CountersignError).hint).toMatch(/may or may not have been saved/);
    const rolledBack = await lostUnder(false);
    expect(CountersignError.is(rolledBack) && rolledBack.code).toBe('STORE_UNAVAILABLE');
    expect((rolledBack as CountersignError).hint).toMatch(/Nothing was saved/);
    // PostgreSQL ended both transactions with their sessions: neither row exists.
    expect(await ids()).not.toContain('e1');
    expect(await ids()).not.toContain('e2');
  });
});
