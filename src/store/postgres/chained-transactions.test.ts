import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  TEST_PG_URL,
  withAdmin,
} from '../../../test/helpers/postgres.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { type Connection, createConnection, openPool } from './connection.ts';
import { createGroupCommit, type LinkAudit, type Write } from './group-commit.ts';

const url = await postgresForTests();

/**
 * A batch queued behind the COMMIT of the one before, on the same connection
 * (TransactionChain in connection.ts). These pin the two ways that could lose a committed
 * write: a ROLLBACK sent after the first batch failed would land inside the second's
 * transaction, and a connection returned to the pool while the second batch is still open
 * would let another caller's statement run inside it.
 */
describe.skipIf(url === null)('PostgreSQL transactions chained on one connection', () => {
  const schema = freshSchema('chain');
  const table = `"${schema}".t`;
  let connection: Connection;

  beforeAll(async () => {
    await withAdmin(async (client) => {
      await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(`CREATE TABLE ${table} (id text PRIMARY KEY)`);
    });
    connection = createConnection(await openPool(url ?? TEST_PG_URL, { max: 3 }), 'the test server');
  });
  afterAll(async () => {
    await connection?.close();
    await dropSchema(schema);
  });

  const ids = async (prefix: string) =>
    (await connection.query(`SELECT id FROM ${table} WHERE id LIKE $1 ORDER BY id`, [`${prefix}%`])).map(
      (row) => row.id,
    );
  /** One statement that takes `seconds` before it inserts `id`. */
  const slowInsert =
    (id: string, seconds: number): Write<string> =>
    async (q) => {
      await q(`INSERT INTO ${table} (id) SELECT $1 FROM pg_sleep($2)`, [id, seconds]);
      return id;
    };
  const insert =
    (id: string): Write<string> =>
    async (q, audit) => {
      await q(`INSERT INTO ${table} (id) VALUES ($1)`, [id]);
      // An event, so the write is linked (and its COMMIT sent with the link).
      audit(
        [{ kind: 'x', session: null, requestId: id, actor: 'x', data: {} } as never],
        '2026-12-02T00:00:00.000Z',
      );
      return id;
    };
  const sleeping = async (marker: string) =>
    withAdmin(async (client) => {
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()`,
        [`%${marker}%`],
      );
      return (rows[0] as { n: number }).n;
    });

  it('a batch whose link fails after its COMMIT is queued leaves the batch queued behind it committed', async () => {
    let links = 0;
    const link: LinkAudit = async (q, _groups, closing) => {
      links += 1;
      // The first link fails in PostgreSQL with its COMMIT (and the next batch) queued behind
      // it: that COMMIT becomes a rollback, and nothing more may be sent for this batch.
      const text = links === 1 ? 'SELECT 1 / 0 AS refused_link' : 'SELECT 1 AS linked';
      await q(text, [], { last: closing ?? false });
    };
    const group = createGroupCommit(connection, link, 3);
    const first = group.run(slowInsert('b1', 0.2), 'one');
    await vi.waitFor(async () => expect(await sleeping('pg_sleep($2)')).toBeGreaterThan(0));
    const behind = [group.run(insert('b2'), 'one'), group.run(insert('b3'), 'one')];
    // The first write alone: the link's error is its own, and it wrote nothing. The batch
    // behind it committed, and was not undone by anything sent for the first.
    await expect(first).rejects.toThrow('division by zero');
    expect(await Promise.all(behind)).toEqual(['b2', 'b3']);
    expect(await ids('b')).toEqual(['b2', 'b3']);
  });

  it('the connection lent to the next batch returns to the pool only once that batch is done', async () => {
    const group = createGroupCommit(
      connection,
      async (q, _groups, closing) => {
        await q('SELECT 1 AS linked', [], { last: closing ?? false });
      },
      3,
    );
    const first = group.run(slowInsert('c1', 0.2), 'one');
    await vi.waitFor(async () => expect(await sleeping('pg_sleep($2)')).toBeGreaterThan(0));
    // Queued behind the first batch's COMMIT on its connection: inserts, waits, then fails on
    // a duplicate, so its whole transaction rolls back.
    const failing = group.run(async (q) => {
      await q(`INSERT INTO ${table} (id) VALUES ('c2')`);
      await q('SELECT pg_sleep(0.4) AS chained_sleep');
      await q(`INSERT INTO ${table} (id) VALUES ('c1')`);
      return 'c2';
    }, 'many');
    expect(await first).toBe('c1');
    await vi.waitFor(async () => expect(await sleeping('chained_sleep')).toBeGreaterThan(0));
    // The first batch is done and has released the connection; the second still holds it.
    // Statements of other callers meanwhile must run on other connections, not inside it.
    const others = await Promise.all(
      ['c3', 'c4', 'c5', 'c6', 'c7', 'c8'].map((id) =>
        connection.query(`INSERT INTO ${table} (id) VALUES ($1) RETURNING id`, [id]),
      ),
    );
    expect(others.flat().map((row) => row.id)).toEqual(['c3', 'c4', 'c5', 'c6', 'c7', 'c8']);
    const outcome = await failing.then(
      () => 'committed',
      (error: unknown) => (CountersignError.is(error) ? error.code : String(error)),
    );
    expect(outcome).toBe('INVALID_INPUT');
    expect(await ids('c')).toEqual(['c1', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8']);
  });
});
