import { afterAll, describe, expect, it } from 'vitest';
import {
  badLegacyTimes,
  expectAdoptionRefused,
  legacyDone,
  legacyWaiting,
} from '../../../test/helpers/legacy-bad-times.ts';
import { dropSchema, freshSchema, postgresForTests, withAdmin } from '../../../test/helpers/postgres.ts';
import { at } from '../conformance/fixtures.ts';
import { loadMigrations } from './migrate.ts';
import { createPostgresStore } from './postgres-store.ts';

const url = await postgresForTests();

/** A checkpoint body as written before requests were rows, waiting on `requests`. */
const waitingOn = (requests: readonly object[]) => ({
  format: 1,
  contract: { nodes: {} },
  state: { messages: [], requests, origin: { by: 'desk', customer: 'c-100' } },
});

describe.skipIf(url === null)('PostgreSQL: adopting requests written before they were rows', () => {
  const connectionString = url ?? '';
  const schemas: string[] = [];
  afterAll(async () => {
    for (const name of schemas) await dropSchema(name);
  });

  /**
   * A schema at migration 8 holding run `r`: one checkpoint per body, oldest first, the last
   * the run's latest, and the answers `workflow_answers` recorded.
   */
  async function legacySchema(
    bodies: readonly unknown[],
    answers: ReadonlyArray<{ requestId: string; at: string }>,
  ): Promise<string> {
    const schema = freshSchema('adopt_times');
    schemas.push(schema);
    await withAdmin(async (client) => {
      await client.query('BEGIN');
      await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(`SET LOCAL search_path TO "${schema}"`);
      await client.query(
        'CREATE TABLE migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      for (const migration of loadMigrations().slice(0, 8)) {
        await client.query(migration.sql);
        await client.query('INSERT INTO migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
      }
      const latest = bodies.length - 1;
      await client.query(
        `INSERT INTO workflow_runs (id, workflow, version, status, latest, latest_seq, created_at, updated_at)
         VALUES ('r', 'refund', 1, 'awaiting_input', $1, $2, $3, $3)`,
        [`cp-${latest}`, latest, at(1)],
      );
      for (const [seq, body] of bodies.entries())
        await client.query(
          `INSERT INTO workflow_checkpoints (id, run, seq, parent, superstep, created_at, workflow, version, status, body)
           VALUES ($1, 'r', $2, $3, $4, $5, 'refund', 1, 'awaiting_input', $6)`,
          [`cp-${seq}`, seq, seq === 0 ? null : `cp-${seq - 1}`, seq + 1, at(1), JSON.stringify(body)],
        );
      for (const answer of answers)
        await client.query(
          `INSERT INTO workflow_answers (run, request_id, response, answered_by, answered_at, expired)
           VALUES ('r', $1, '{"approved":true}', 'mona', $2, false)`,
          [answer.requestId, answer.at],
        );
      await client.query('COMMIT');
    });
    return schema;
  }

  /** How many answers `workflow_answers` still holds; null once the table is gone. */
  const answersLeft = (schema: string) =>
    withAdmin(async (client) => {
      const table = await client.query(
        `SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND c.relname = 'workflow_answers'`,
        [schema],
      );
      if (table.rows.length === 0) return null;
      return (await client.query(`SELECT request_id FROM "${schema}".workflow_answers`)).rows.length;
    });

  it('rewrites a time with an explicit zone to the stored UTC form, and judges only the rows it adopts', async () => {
    const schema = await legacySchema(
      [
        waitingOn([
          // Answered and applied already: adopted from this earlier checkpoint for its answer.
          {
            id: 'req_done',
            port: 'manager-approval',
            data: { amount: 12 },
            createdAt: '2030-01-01T00:00:01Z',
          },
          // Unanswered in an earlier checkpoint: not adopted, so its time is never read.
          { id: 'req_gone', port: 'manager-approval', data: { amount: 1 }, createdAt: 'yesterday' },
        ]),
        waitingOn([
          {
            id: 'req_wait',
            port: 'manager-approval',
            data: { amount: 35 },
            createdAt: '2030-01-01T02:00:01+02:00',
            expiresAt: '+002030-01-01T00:08:20Z',
          },
        ]),
      ],
      [{ requestId: 'req_done', at: '2030-01-01T01:00:02.000+01:00' }],
    );
    const store = await createPostgresStore({ connectionString, schema });
    try {
      expect(await store.getApproval('req_wait')).toMatchObject({
        status: 'pending',
        createdAt: at(1),
        expiresAt: at(500),
      });
      expect(await store.getApproval('req_done')).toMatchObject({
        status: 'answered',
        createdAt: at(1),
        expiresAt: '9999-12-31T23:59:59.999Z',
        decision: { verdict: 'answered', by: 'mona', at: at(2) },
      });
      expect(await store.getApproval('req_gone')).toBeNull();
      expect(await answersLeft(schema)).toBeNull();
      // Stored in the one form, the adopted request is due at its expiry like any other.
      expect((await store.listDue({ at: at(500), limit: 10 })).map((row) => row.id)).toEqual(['req_wait']);
    } finally {
      await store.close();
    }
  });

  it('refuses a time it cannot read without guessing (CORRUPT_DATA naming the row), changing nothing until it is corrected', async () => {
    let last = '';
    for (const bad of badLegacyTimes) {
      const { edit, answeredAt } = bad;
      last = await legacySchema(
        [waitingOn([{ ...legacyWaiting, ...edit }, legacyDone])],
        [{ requestId: 'req_done', at: answeredAt ?? at(2) }],
      );
      const refused = await createPostgresStore({ connectionString, schema: last }).then(
        async (store) => {
          await store.close();
          return undefined;
        },
        (error: unknown) => error,
      );
      expectAdoptionRefused(refused, bad);
      expect(await answersLeft(last)).toBe(1);
      const adopted = await withAdmin(
        async (client) => (await client.query(`SELECT id FROM "${last}".approvals`)).rows,
      );
      expect(adopted).toEqual([]);
    }
    // Corrected, the next open adopts it.
    await withAdmin((client) =>
      client.query(`UPDATE "${last}".workflow_answers SET answered_at = $1 WHERE request_id = 'req_done'`, [
        '2030-01-01T00:00:02Z',
      ]),
    );
    const store = await createPostgresStore({ connectionString, schema: last });
    try {
      expect(await store.getApproval('req_done')).toMatchObject({ decision: { at: at(2) } });
      expect(await store.getApproval('req_wait')).toMatchObject({ status: 'pending', createdAt: at(1) });
      expect(await answersLeft(last)).toBeNull();
    } finally {
      await store.close();
    }
  });
});
