import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import { type Connection, createConnection, openPool } from './connection.ts';
import { createGroupCommit, type GroupCommit, type Write } from './group-commit.ts';

const url = await postgresForTests();

/** Socket writes (each one system call) made while `work` runs. */
async function socketWrites(work: () => Promise<unknown>): Promise<number> {
  const one = vi.spyOn(net.Socket.prototype, '_write');
  const many = vi.spyOn(net.Socket.prototype, '_writev');
  try {
    await work();
    return one.mock.calls.length + many.mock.calls.length;
  } finally {
    one.mockRestore();
    many.mockRestore();
  }
}

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

  it('a last statement that fails before it is sent (a value pg cannot serialize) commits nothing', async () => {
    // pg fails such a statement in the client, sending nothing for it: a COMMIT sent behind
    // it anyway would commit the statements before it while the transaction reports a failure.
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const failed = await connection
      .transaction(async (q) => {
        await q(`INSERT INTO ${table} VALUES ('g1')`);
        await q(`INSERT INTO ${table} VALUES ($1)`, [circular], { last: true });
      })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(TypeError);
    expect(await ids()).not.toContain('g1');
    await connection.transaction((q) => q(`INSERT INTO ${table} VALUES ('g2')`, [], { last: true }));
    expect(await ids()).toContain('g2');
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

  it('BEGIN, the statement and the COMMIT sent with it leave in one socket write', async () => {
    await connection.query('SELECT 1'); // a warm connection: no handshake in the count
    const writes = await socketWrites(() =>
      connection.transaction((q) => q(`INSERT INTO ${table} VALUES ('w1')`, [], { last: true })),
    );
    // Without coalescing: BEGIN, the statement and COMMIT, three writes.
    expect(writes).toBe(1);
    expect(await ids()).toContain('w1');
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

/**
 * The group commit pipelines the statements of writes declared `one` (WriteShape) and runs a
 * `many` write by itself. These pin that a `many` write sees exactly the writes queued before
 * it, that a mislabelled write is refused rather than committed, and that the failing write
 * of a pipelined run is the one blamed.
 */
describe.skipIf(url === null)('PostgreSQL group commit with pipelined writes', () => {
  const schema = freshSchema('pipebatch');
  const table = `"${schema}".t`;
  let connection: Connection;
  let group: GroupCommit;

  beforeAll(async () => {
    await withAdmin(async (client) => {
      await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(`CREATE TABLE ${table} (id text PRIMARY KEY, seen int)`);
    });
    connection = createConnection(await openPool(url ?? TEST_PG_URL, { max: 4 }), 'the test server');
    // No audit events here: the link has nothing to do.
    group = createGroupCommit(connection, async () => {});
  });
  afterAll(async () => {
    await connection?.close();
    await dropSchema(schema);
  });

  const insert =
    (id: string): Write<string> =>
    async (q) => {
      await q(`INSERT INTO ${table} (id) VALUES ($1)`, [id]);
      return id;
    };
  /** Holds the group's transaction for a moment, so the writes started meanwhile form one batch. */
  const holding: Write<null> = async (q) => {
    await q('SELECT pg_sleep(0.2)');
    return null;
  };

  it('a many write runs after the one writes before it and before those after it', async () => {
    const first = group.run(holding, 'one');
    const results = await Promise.all([
      group.run(insert('a1'), 'one'),
      group.run(insert('a2'), 'one'),
      group.run(async (q) => {
        // Were it pipelined with the rest, a3 would be sent while this waits, and counted.
        await q('SELECT pg_sleep(0.05)');
        const [row] = await q(`SELECT count(*)::int AS n FROM ${table} WHERE id LIKE 'a%'`);
        await q(`INSERT INTO ${table} (id, seen) VALUES ('b', $1)`, [row?.n]);
        return 'b';
      }, 'many'),
      group.run(insert('a3'), 'one'),
    ]);
    await first;
    expect(results).toEqual(['a1', 'a2', 'b', 'a3']);
    const [b] = await connection.query(`SELECT seen FROM ${table} WHERE id = 'b'`);
    expect(b?.seen).toBe(2);
  });

  it("a batch's BEGIN and its one-statement writes leave in one socket write", async () => {
    await connection.query('SELECT 1');
    const writes = await socketWrites(async () => {
      const first = group.run(holding, 'one');
      await Promise.all([
        group.run(insert('w1'), 'one'),
        group.run(insert('w2'), 'one'),
        group.run(insert('w3'), 'one'),
      ]);
      await first;
    });
    // The holding batch: BEGIN with its statement. Its COMMIT (no audit link to carry it),
    // with the next batch queued behind it on the same connection: BEGIN and the three
    // inserts. Then that batch's COMMIT. Each statement written on its own would be eight;
    // the next batch on a connection of its own, four.
    expect(writes).toBe(3);
  });

  it('the next batch goes out behind the COMMIT of the one before, on its connection, and commits after it', async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const order: string[] = [];
    // The first batch's COMMIT is queued, but its caller hears back only once the gate
    // opens: the writes that arrive meanwhile must not wait for that.
    const gated = createGroupCommit(connection, async (q, _groups, closing) => {
      order.push('link');
      const sent = q('SELECT 1', [], { last: closing ?? false });
      if (order.length === 1) await gate;
      await sent;
    });
    const eIds = async () =>
      (await connection.query(`SELECT id FROM ${table} WHERE id LIKE 'e%' ORDER BY id`)).map((r) => r.id);
    const first = gated.run(insert('e1'), 'one');
    try {
      await vi.waitFor(() => expect(order).toEqual(['link']));
      const second = await Promise.race([
        gated.run(insert('e2'), 'one'),
        new Promise((resolve) => setTimeout(resolve, 3000, 'still waiting behind the first')),
      ]);
      expect(second).toBe('e2');
      // Run after the first's COMMIT on the same connection: e1 is in before e2 is.
      expect(await eIds()).toEqual(['e1', 'e2']);
    } finally {
      release();
    }
    expect(await first).toBe('e1');
    expect(await eIds()).toEqual(['e1', 'e2']);
  });

  it('a write declared one that sends two statements is refused and commits nothing', async () => {
    const first = group.run(holding, 'one');
    const outcomes = await Promise.allSettled([
      group.run(insert('c1'), 'one'),
      group.run(async (q) => {
        await q(`INSERT INTO ${table} (id) VALUES ('c2')`);
        await q(`INSERT INTO ${table} (id) VALUES ('c3')`);
        return 'c2';
      }, 'one'),
    ]);
    await first;
    expect(outcomes[0]).toEqual({ status: 'fulfilled', value: 'c1' });
    expect(outcomes[1]?.status).toBe('rejected');
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(
      /declared to send one statement sent 2/,
    );
    const ids = (await connection.query(`SELECT id FROM ${table} WHERE id LIKE 'c%' ORDER BY id`)).map(
      (r) => r.id,
    );
    expect(ids).toEqual(['c1']);
  });

  it('the write whose statement fails is blamed, not the ones sent behind it; they commit', async () => {
    await connection.query(`INSERT INTO ${table} (id) VALUES ('taken')`);
    const first = group.run(holding, 'one');
    const outcomes = await Promise.allSettled([
      group.run(insert('d1'), 'one'),
      group.run(insert('taken'), 'one'),
      group.run(insert('d2'), 'one'),
    ]);
    await first;
    expect(outcomes[0]).toEqual({ status: 'fulfilled', value: 'd1' });
    const failed = (outcomes[1] as PromiseRejectedResult).reason;
    // Its own error (a duplicate), not the "transaction is aborted" the write behind it got.
    expect(CountersignError.is(failed) && failed.code).toBe('INVALID_INPUT');
    expect(outcomes[2]).toEqual({ status: 'fulfilled', value: 'd2' });
    const ids = (await connection.query(`SELECT id FROM ${table} WHERE id LIKE 'd%' ORDER BY id`)).map(
      (r) => r.id,
    );
    expect(ids).toEqual(['d1', 'd2']);
  });

  it("a write's own STORE_UNAVAILABLE fails that write alone; the others of its batch commit", async () => {
    const first = group.run(holding, 'one');
    const outcomes = await Promise.allSettled([
      group.run(insert('f1'), 'one'),
      group.run(async (q) => {
        await q(`INSERT INTO ${table} (id) VALUES ('f2')`);
        // As a data key the codec cannot fetch would fail it: the store is fine.
        throw new StoreUnavailableError('The key store cannot be reached.');
      }, 'one'),
      group.run(insert('f3'), 'one'),
    ]);
    await first;
    expect(outcomes[0]).toEqual({ status: 'fulfilled', value: 'f1' });
    expect(outcomes[1]?.status).toBe('rejected');
    expect(outcomes[2]).toEqual({ status: 'fulfilled', value: 'f3' });
    const ids = (await connection.query(`SELECT id FROM ${table} WHERE id LIKE 'f%' ORDER BY id`)).map(
      (r) => r.id,
    );
    expect(ids).toEqual(['f1', 'f3']);
  });
  it('writes sent behind a failed one with a statement new to the connection (its prepare refused, 25P02, then 26000) are not blamed, and the statement works after', async () => {
    await connection.query(`INSERT INTO ${table} (id) VALUES ('np-taken')`);
    // A text no other test sends: not yet prepared on any connection of the pool.
    const fresh =
      (id: string): Write<string> =>
      async (q) => {
        await q(`INSERT INTO ${table} (id, seen) VALUES ($1, 26000)`, [id]);
        return id;
      };
    for (const round of [1, 2]) {
      const first = group.run(holding, 'one');
      const outcomes = await Promise.allSettled([
        group.run(insert(round === 1 ? 'np-taken' : 'np-1b'), 'one'),
        group.run(fresh(`np-${round}x`), 'one'),
        group.run(fresh(`np-${round}y`), 'one'),
      ]);
      await first;
      if (round === 1) {
        const failed = (outcomes[0] as PromiseRejectedResult).reason;
        expect(CountersignError.is(failed) && failed.code).toBe('INVALID_INPUT');
      } else expect(outcomes[0]?.status).toBe('fulfilled');
      expect(outcomes.slice(1)).toEqual([
        { status: 'fulfilled', value: `np-${round}x` },
        { status: 'fulfilled', value: `np-${round}y` },
      ]);
    }
    const ids = (await connection.query(`SELECT id FROM ${table} WHERE seen = 26000 ORDER BY id`)).map(
      (r) => r.id,
    );
    expect(ids).toEqual(['np-1x', 'np-1y', 'np-2x', 'np-2y']);
  });

  it('a deadlock under a pipelined batch runs the batch again: every write commits once', async () => {
    await connection.query(`INSERT INTO ${table} (id, seen) VALUES ('dl-x', 0), ('dl-y', 0)`);
    const bump =
      (id: string): Write<string> =>
      async (q) => {
        await q(`UPDATE ${table} SET seen = seen + 1 WHERE id = $1`, [id]);
        return id;
      };
    await withAdmin(async (other) => {
      // Another transaction holds dl-y; the batch locks dl-x, then waits for dl-y.
      await other.query('BEGIN');
      await other.query(`UPDATE ${table} SET seen = seen + 10 WHERE id = 'dl-y'`);
      const first = group.run(holding, 'one');
      const batch = Promise.allSettled([group.run(bump('dl-x'), 'one'), group.run(bump('dl-y'), 'one')]);
      await first;
      await new Promise((resolve) => setTimeout(resolve, 200));
      // Now it waits for dl-x, which the batch holds: a deadlock, which the batch's backend
      // (waiting longer) finds and fails with 40P01.
      await other.query(`UPDATE ${table} SET seen = seen + 10 WHERE id = 'dl-x'`);
      await other.query('COMMIT');
      expect(await batch).toEqual([
        { status: 'fulfilled', value: 'dl-x' },
        { status: 'fulfilled', value: 'dl-y' },
      ]);
    });
    const rows = await connection.query(`SELECT id, seen FROM ${table} WHERE id LIKE 'dl-%' ORDER BY id`);
    expect(rows).toEqual([
      { id: 'dl-x', seen: 11 },
      { id: 'dl-y', seen: 11 },
    ]);
  }, 20_000);

  it('a connection lost under a pipelined batch fails every write of it with STORE_UNAVAILABLE, runs none again, and writes nothing', async () => {
    const lostUnder = async (where: 'write' | 'link') => {
      const app = `cs_test_pipe_${randomBytes(4).toString('hex')}`;
      const lossy = createConnection(
        await openPool(withApplicationName(url ?? TEST_PG_URL, app), { max: 2 }),
        'the test server',
      );
      // The link sleeps (carrying the COMMIT behind it when `where` is 'link'), so the loss lands there.
      const sleepy = createGroupCommit(lossy, async (q, groups, closing) => {
        if (groups.length > 0) await q(`SELECT pg_sleep(30) AS slept_in_link`, [], { last: closing });
      });
      const calls = new Map<string, number>();
      const counted =
        (id: string): Write<string> =>
        async (q, audit) => {
          calls.set(id, (calls.get(id) ?? 0) + 1);
          await q(`INSERT INTO ${table} (id) VALUES ($1)`, [id]);
          if (where === 'link') audit([{ kind: 'request.decided' } as never], 'now');
          return id;
        };
      try {
        const first = sleepy.run(holding, 'one');
        const outcomes = Promise.allSettled([
          sleepy.run(counted(`${where}1`), 'one'),
          sleepy.run(async (q) => {
            calls.set('sleeper', (calls.get('sleeper') ?? 0) + 1);
            if (where === 'write') await q('SELECT pg_sleep(30) AS slept_in_write');
            return 'sleeper';
          }, 'one'),
          sleepy.run(counted(`${where}2`), 'one'),
        ]);
        await first;
        const ended = await terminateBackendsWhenBusy(app, { busyWith: 'slept_in' });
        expect(ended).toBeGreaterThan(0);
        const settled = await outcomes;
        for (const outcome of settled) {
          expect(outcome.status).toBe('rejected');
          const reason = (outcome as PromiseRejectedResult).reason;
          expect(CountersignError.is(reason) && reason.code).toBe('STORE_UNAVAILABLE');
          expect((reason as CountersignError).hint).toMatch(
            where === 'link' ? /may or may not have been saved/ : /Nothing was saved/,
          );
        }
        expect(Object.fromEntries(calls)).toEqual({ [`${where}1`]: 1, sleeper: 1, [`${where}2`]: 1 });
        const ids = (
          await connection.query(`SELECT id FROM ${table} WHERE id LIKE $1 ORDER BY id`, [`${where}%`])
        ).map((r) => r.id);
        expect(ids).toEqual([]);
      } finally {
        await lossy.close();
      }
    };
    await lostUnder('write');
    await lostUnder('link');
  }, 30_000);
});
