import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
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
import { verifyAuditChain } from '../../core/audit.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { createEncryption } from '../../crypto/encryption.ts';
import { envKeyProvider } from '../../crypto/env-key-provider.ts';
import { byPerson, leasedSession, raise, request, event as storedEvent } from '../conformance/fixtures.ts';
import { type Connection, createConnection, openPool } from './connection.ts';
import { createGroupCommit, type LinkAudit, type Write } from './group-commit.ts';
import { createPostgresStore } from './postgres-store.ts';

const url = await postgresForTests();

/**
 * Failures of a batch queued behind the COMMIT of the one before, on the same connection
 * (TransactionChain in connection.ts): a retried first batch, the shared connection ended
 * under both, a connection wrapper that does not pass the chain on. Each write must settle
 * once, with what it can know about its outcome, and be committed at most once.
 */
describe.skipIf(url === null)('PostgreSQL chained transactions that fail', () => {
  const schema = freshSchema('chainfail');
  const table = `"${schema}".t`;

  beforeAll(async () => {
    await withAdmin(async (client) => {
      await client.query(`CREATE SCHEMA "${schema}"`);
      // Which backend wrote each row: rows of one chain share it.
      await client.query(
        `CREATE TABLE ${table} (id text PRIMARY KEY, pid int NOT NULL DEFAULT pg_backend_pid())`,
      );
      await client.query(`CREATE SEQUENCE "${schema}".failures`);
      // Fails with `code` the first time it runs, as a deadlock victim or a serialization
      // failure would (the sequence is not rolled back with the transaction).
      await client.query(`CREATE FUNCTION "${schema}".fail_once(code text) RETURNS int LANGUAGE plpgsql AS $$
        BEGIN
          IF nextval('"${schema}".failures') = 1 THEN RAISE EXCEPTION 'injected %', code USING ERRCODE = code; END IF;
          RETURN 1;
        END $$`);
    });
  });
  afterAll(() => dropSchema(schema));

  const rowsOf = async (prefix: string) =>
    withAdmin(async (client) => {
      const { rows } = await client.query<{ id: string; pid: number }>(
        `SELECT id, pid FROM ${table} WHERE id LIKE $1 ORDER BY id`,
        [`${prefix}%`],
      );
      return rows;
    });
  const event = (id: string) => [{ kind: 'x', session: null, requestId: id, actor: 'x', data: {} } as never];
  /** An insert with an audit event, so its batch has a link that carries the COMMIT. */
  const insert =
    (id: string, seconds = 0): Write<string> =>
    async (q, audit) => {
      await q(`INSERT INTO ${table} (id) SELECT $1::text FROM pg_sleep($2)`, [id, seconds]);
      audit(event(id), '2026-12-02T00:00:00.000Z');
      return id;
    };
  const outcome = (p: Promise<unknown>) =>
    p.then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error: error as Error }),
    );
  async function pooled(
    max: number,
    app?: string,
  ): Promise<{ connection: Connection; pool: Pool; acquired: () => number }> {
    const pool = await openPool(app ? withApplicationName(url ?? TEST_PG_URL, app) : (url ?? TEST_PG_URL), {
      max,
    });
    let acquires = 0;
    pool.on('acquire', () => {
      acquires += 1;
    });
    return { connection: createConnection(pool, 'the test server'), pool, acquired: () => acquires };
  }

  it.each(['40001', '40P01'])(
    'a batch whose link fails with %s after the next was queued behind it: it runs again, each write once',
    async (code) => {
      await withAdmin((client) => client.query(`ALTER SEQUENCE "${schema}".failures RESTART`));
      const prefix = `r${code}-`;
      const { connection, acquired } = await pooled(3);
      let links = 0;
      const link: LinkAudit = async (q, groups, closing) => {
        links += 1;
        const n = groups.reduce((sum, group) => sum + group.events.length, 0);
        await q(`SELECT "${schema}".fail_once($1) + $2 AS linked`, [code, n], { last: closing ?? false });
      };
      const group = createGroupCommit(connection, link, 3);
      try {
        const first = outcome(group.run(insert(`${prefix}1`, 0.2), 'one'));
        await new Promise((resolve) => setTimeout(resolve, 50));
        const behind = [
          outcome(group.run(insert(`${prefix}2`), 'one')),
          outcome(group.run(insert(`${prefix}3`), 'one')),
        ];
        const all = await Promise.all([first, ...behind]);
        expect(all.map((o) => (o.ok ? o.value : String(o.error)))).toEqual([
          `${prefix}1`,
          `${prefix}2`,
          `${prefix}3`,
        ]);
        const rows = await rowsOf(prefix);
        expect(rows.map((row) => row.id)).toEqual([`${prefix}1`, `${prefix}2`, `${prefix}3`]);
        // The batch behind ran on the first attempt's connection, behind its COMMIT (which
        // rolled back); the first batch's retry checked one out again (maybe the same, pooled
        // again by then).
        expect(links).toBe(3);
        expect(acquired()).toBe(2);
        expect(rows[1]!.pid).toBe(rows[2]!.pid);
      } finally {
        await connection.close();
      }
    },
  );

  it('the shared connection ended during the first batch link: it may have committed, the one behind did not', async () => {
    const app = `cs_test_chainfail_${randomBytes(4).toString('hex')}`;
    const { connection, pool } = await pooled(3, app);
    let links = 0;
    const link: LinkAudit = async (q, _groups, closing) => {
      links += 1;
      const text = links === 1 ? 'SELECT 1 AS slow_link FROM pg_sleep(5)' : 'SELECT 1 AS linked';
      await q(text, [], { last: closing ?? false });
    };
    const group = createGroupCommit(connection, link, 3);
    try {
      const first = outcome(group.run(insert('t1', 0.1), 'one'));
      await new Promise((resolve) => setTimeout(resolve, 30));
      const behind = [outcome(group.run(insert('t2'), 'one')), outcome(group.run(insert('t3'), 'one'))];
      expect(await terminateBackendsWhenBusy(app, { busyWith: 'slow_link' })).toBeGreaterThan(0);
      const hints = (await Promise.all([first, ...behind])).map((o) => {
        if (o.ok) return `saved ${String(o.value)}`;
        expect(CountersignError.is(o.error) && o.error.code).toBe('STORE_UNAVAILABLE');
        return String((o.error as CountersignError).hint);
      });
      // The first one's COMMIT was on the wire; the ones behind it never sent theirs.
      expect(hints[0]).toMatch(/may or may not/);
      expect(hints[1]).toMatch(/Nothing was saved/);
      expect(hints[2]).toMatch(/Nothing was saved/);
      expect(await rowsOf('t')).toEqual([]);
      // The dead connection was closed, not pooled: what follows runs on live ones.
      await vi.waitFor(() => expect(pool.totalCount).toBe(0));
      expect(await group.run(insert('t4'), 'one')).toBe('t4');
      const after = await Promise.all(['t5', 't6', 't7'].map((id) => group.run(insert(id), 'one')));
      expect(after).toEqual(['t5', 't6', 't7']);
    } finally {
      await connection.close();
    }
  });

  it('the shared connection ended after the first batch committed: the first is saved, the one behind is not', async () => {
    const app = `cs_test_chainfail_${randomBytes(4).toString('hex')}`;
    const { connection, pool } = await pooled(3, app);
    const group = createGroupCommit(
      connection,
      async (q, _groups, closing) => {
        await q('SELECT 1 AS linked', [], { last: closing ?? false });
      },
      3,
    );
    try {
      const first = outcome(group.run(insert('u1', 0.1), 'one'));
      await new Promise((resolve) => setTimeout(resolve, 30));
      const behind = outcome(
        group.run(async (q, audit) => {
          await q(`INSERT INTO ${table} (id) VALUES ('u2')`);
          await q('SELECT pg_sleep(5) AS chained_sleep');
          audit(event('u2'), 'at');
          return 'u2';
        }, 'many'),
      );
      expect(await terminateBackendsWhenBusy(app, { busyWith: 'chained_sleep' })).toBeGreaterThan(0);
      const [a, b] = await Promise.all([first, behind]);
      expect(a).toEqual({ ok: true, value: 'u1' });
      expect(b.ok).toBe(false);
      if (!b.ok) {
        expect(CountersignError.is(b.error) && b.error.code).toBe('STORE_UNAVAILABLE');
        expect(String((b.error as CountersignError).hint)).toMatch(/Nothing was saved/);
      }
      expect((await rowsOf('u')).map((row) => row.id)).toEqual(['u1']);
      await vi.waitFor(() => expect(pool.totalCount).toBe(0));
      expect(await group.run(insert('u3'), 'one')).toBe('u3');
    } finally {
      await connection.close();
    }
  });

  it('a batch of writes without audit events queues its COMMIT after its work, and the next follows it', async () => {
    const { connection } = await pooled(3);
    const group = createGroupCommit(
      connection,
      async (q, groups, closing) => {
        if (groups.length === 0) return;
        await q('SELECT 1 AS linked', [], { last: closing ?? false });
      },
      3,
    );
    try {
      const single =
        (id: string): Write<string> =>
        async (q) => {
          await q(`INSERT INTO ${table} (id) VALUES ($1)`, [id]);
          return id;
        };
      const first = group.run(insert('v1', 0.15), 'one');
      await new Promise((resolve) => setTimeout(resolve, 30));
      // Writes without events join the batch behind (one with events is in flight): its
      // COMMIT is queued once its work returned, with no link to carry it.
      const second = [group.run(single('v2'), 'single'), group.run(single('v3'), 'single')];
      await new Promise((resolve) => setTimeout(resolve, 30));
      const third = [group.run(insert('v4'), 'one'), group.run(insert('v5'), 'one')];
      expect(await Promise.all([first, ...second, ...third])).toEqual(['v1', 'v2', 'v3', 'v4', 'v5']);
      const rows = await rowsOf('v');
      expect(rows.map((row) => row.id)).toEqual(['v1', 'v2', 'v3', 'v4', 'v5']);
      // The second batch ran behind the first's COMMIT, on its connection.
      expect(rows[1]!.pid).toBe(rows[0]!.pid);
      expect(rows[2]!.pid).toBe(rows[0]!.pid);
    } finally {
      await connection.close();
    }
  });

  it('a connection wrapper that drops the chain only loses the chaining: every batch still commits', async () => {
    const { connection } = await pooled(3);
    const dropping: Connection = { ...connection, transaction: (work) => connection.transaction(work) };
    const group = createGroupCommit(
      dropping,
      async (q, _groups, closing) => {
        await q('SELECT 1 AS linked', [], { last: closing ?? false });
      },
      3,
    );
    try {
      const waves: Promise<string>[] = [];
      for (let w = 0; w < 4; w++) {
        for (let i = 0; i < 3; i++) waves.push(group.run(insert(`w${w}${i}`, i === 0 ? 0.05 : 0), 'one'));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const done = await Promise.race([
        Promise.all(waves),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('writes hang')), 10_000)),
      ]);
      expect(done).toHaveLength(12);
      expect((await rowsOf('w')).map((row) => row.id)).toEqual([...done].sort());
    } finally {
      await connection.close();
    }
  });
});

/**
 * The encrypting store's decisions in overlapping, chained batches, in a process that has
 * loaded no key yet: a decision's rows are decoded inside its batch, so the batch loads the
 * session's data key on a side connection while it holds (or shares) its own.
 */
describe.skipIf(url === null)('PostgreSQL encrypted store with chained batches loading keys', () => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(schema);
  });
  const keys = `k1:${randomBytes(32).toString('base64')}`;

  it.each([2, 3, 4])('pool of %i: every request decided once, chain and seqs whole', async (max) => {
    const schema = freshSchema(`chainenc${max}`);
    schemas.push(schema);
    const SESSIONS = 6;
    const PER = 6;
    const open = async () => {
      const e = createEncryption(envKeyProvider(keys));
      return e.wrap(
        await createPostgresStore({
          connectionString: url ?? TEST_PG_URL,
          schema,
          codec: e.codec,
          pool: { max, connectionTimeoutMillis: 3000 },
        }),
      );
    };
    const seeding = await open();
    try {
      for (let s = 0; s < SESSIONS; s++) {
        await leasedSession(seeding, `s${s}`);
        await raise(
          seeding,
          `s${s}`,
          Array.from({ length: PER }, (_, i) => request({ id: `r${s}-${i}`, session: `s${s}` })),
        );
      }
    } finally {
      await seeding.close();
    }
    // Another process: no data key loaded yet.
    const store = await open();
    try {
      const ids = Array.from(
        { length: SESSIONS * PER },
        (_, n) => `r${n % SESSIONS}-${Math.floor(n / SESSIONS)}`,
      );
      const sessionOf = (id: string) => `s${id.slice(1, id.indexOf('-'))}`;
      const calls: Promise<{ id: string; won: boolean }>[] = [];
      for (let k = 0; k * 6 < ids.length; k++) {
        for (const id of ids.slice(k * 6, k * 6 + 12)) {
          calls.push(
            store
              .decide(id, byPerson(k % 2 === 0 ? 'approved' : 'rejected', 20), [
                storedEvent('request.decided', sessionOf(id), id),
              ])
              .then((r) => ({ id, won: r.won })),
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 1 + (k % 3)));
      }
      const results = await Promise.all(calls);
      for (const id of ids) {
        expect({ id, wins: results.filter((r) => r.id === id && r.won).length }).toEqual({ id, wins: 1 });
      }
      const audit = await store.listAudit();
      expect(verifyAuditChain(audit).ok).toBe(true);
      expect(audit.map((entry) => entry.seq)).toEqual(audit.map((_, i) => i + 1));
      expect(
        audit
          .filter((e) => e.kind === 'request.decided')
          .map((e) => e.requestId)
          .sort(),
      ).toEqual([...ids].sort());
    } finally {
      await store.close();
    }
  });
});
