import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { decisionAgent } from '../../bench/decision-agent.ts';
import { CountersignError } from '../../src/core/errors/countersign-error.ts';
import { createEncryption } from '../../src/crypto/encryption.ts';
import { envKeyProvider } from '../../src/crypto/env-key-provider.ts';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL, withAdmin } from '../helpers/postgres.ts';

const url = await postgresForTests();

/**
 * Reads of one turn are one statement on PostgreSQL (coalesced-reads.ts), and on an encrypted
 * store the statement's rows have their data keys loaded together. A row edited to name a data
 * key the store does not hold must fail only the caller that asked for it: the decisions that
 * share its turn go through (before 5605d1b every one of them got CORRUPT_DATA).
 */
describe.skipIf(url === null)('PostgreSQL, encrypted: an edited row among reads of one turn', () => {
  const schema = freshSchema('corrupt_turn');
  afterAll(async () => {
    await dropSchema(schema);
  });

  it('fails its own read and decision with CORRUPT_DATA; the others of its turn complete', async () => {
    const keys = `k1:${randomBytes(32).toString('base64')}`;
    const encryption = createEncryption(envKeyProvider(keys));
    const store = encryption.wrap(
      await createPostgresStore({ connectionString: url ?? TEST_PG_URL, schema, codec: encryption.codec }),
    );
    try {
      const agent = decisionAgent(store);
      const ids: string[] = [];
      for (const session of ['a', 'b', 'c', 'd']) {
        ids.push((await agent.chat(`turn-${session}`, 'Refund 1044.')).approvals[0]!.id);
      }
      const [a, b, c, d] = ids as [string, string, string, string];
      // The edit: b's sealed call names a data key that exists nowhere.
      const edited = await withAdmin((client) =>
        client.query(
          `UPDATE "${schema}".approvals SET args_json = regexp_replace(args_json, '^(cs[^:]*:)[^:]+:', '\\1dk_nowhere:')
           WHERE id = $1 AND args_json LIKE 'cs%' RETURNING args_json`,
          [b],
        ),
      );
      expect(edited.rows[0]?.args_json).toMatch(/dk_nowhere:/);

      const code = (outcome: PromiseSettledResult<unknown>) =>
        outcome.status === 'rejected' && CountersignError.is(outcome.reason)
          ? outcome.reason.code
          : outcome.status;
      // Reads started in one turn.
      const reads = await Promise.allSettled([a, b, c].map((id) => store.getApprovalWithSession!(id)));
      expect(reads.map(code)).toEqual(['fulfilled', 'CORRUPT_DATA', 'fulfilled']);
      expect(reads.map((read) => (read.status === 'fulfilled' ? read.value?.request.id : null))).toEqual([
        a,
        null,
        c,
      ]);
      // Decisions started in one turn: the edited one refuses, the others run their tool once.
      const decisions = await Promise.allSettled([b, d, a].map((id) => agent.approve(id, { by: 'alice' })));
      expect(decisions.map(code)).toEqual(['CORRUPT_DATA', 'fulfilled', 'fulfilled']);
      expect(
        decisions
          .slice(1)
          .map((outcome) => (outcome as PromiseFulfilledResult<{ status: string }>).value.status),
      ).toEqual(['completed', 'completed']);
      // The edited request is still waiting, and nothing ran for it (read as rows: the store
      // refuses to open it).
      const left = await withAdmin((client) =>
        client.query(
          `SELECT status, (SELECT count(*)::int FROM "${schema}".executions WHERE request_id = $1) AS runs
           FROM "${schema}".approvals WHERE id = $1`,
          [b],
        ),
      );
      expect(left.rows).toEqual([{ status: 'pending', runs: 0 }]);
    } finally {
      await store.close();
    }
  });
});
