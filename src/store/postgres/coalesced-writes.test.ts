import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  TEST_PG_URL,
  withAdmin,
} from '../../../test/helpers/postgres.ts';
import { coalesceWrites } from './coalesced-writes.ts';
import { type Connection, createConnection, openPool } from './connection.ts';

const url = await postgresForTests();

describe('coalesceWrites without a corkable socket', () => {
  it('does nothing for a client whose stream cannot cork, or that has none', () => {
    expect(() => coalesceWrites({ connection: { stream: {} } } as never)).not.toThrow();
    expect(() => coalesceWrites({} as never)).not.toThrow();
  });
});

/**
 * A pooled client's socket is corked from its first statement of a turn to setImmediate
 * (coalesced-writes.ts). These pin that nothing is lost or stuck: a turn that blocks the loop
 * before the uncork, a client handed on to the next caller while still corked.
 */
describe.skipIf(url === null)('PostgreSQL writes coalesced per turn', () => {
  const schema = freshSchema('coalesce');
  const table = `"${schema}".t`;
  let connection: Connection;

  beforeAll(async () => {
    await withAdmin(async (client) => {
      await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(`CREATE TABLE ${table} (id text PRIMARY KEY)`);
    });
    connection = createConnection(await openPool(url ?? TEST_PG_URL, { max: 1 }), 'the test server');
  });
  afterAll(async () => {
    await connection?.close();
    await dropSchema(schema);
  });

  it('a turn that blocks the event loop while corked only delays the statements', async () => {
    const done = connection.transaction(async (q) => {
      const sent = q(`INSERT INTO ${table} VALUES ('b1')`, [], { last: true });
      const until = Date.now() + 200;
      while (Date.now() < until) {
        // The loop is blocked: the corked socket is not flushed until this turn ends.
      }
      return sent;
    });
    await done;
    const rows = await connection.query(`SELECT id FROM ${table} WHERE id = 'b1'`);
    expect(rows).toHaveLength(1);
  });

  it('one pooled connection handed from caller to caller: every statement answered, in order', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `h${String(i).padStart(2, '0')}`);
    await Promise.all(
      ids.map((id, i) =>
        i % 2 === 0
          ? connection.query(`INSERT INTO ${table} VALUES ($1)`, [id])
          : connection.transaction((q) => q(`INSERT INTO ${table} VALUES ($1)`, [id], { last: true })),
      ),
    );
    const rows = await connection.query(`SELECT id FROM ${table} WHERE id LIKE 'h%' ORDER BY id`);
    expect(rows.map((row) => row.id)).toEqual(ids);
    // A failing transaction (its ROLLBACK corked with others) leaves the connection usable.
    await expect(
      connection.transaction((q) => q(`INSERT INTO ${table} VALUES ('h00')`, [], { last: true })),
    ).rejects.toThrow();
    expect(await connection.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });
});
