import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { decisionAgent } from '../../bench/decision-agent.ts';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL } from '../helpers/postgres.ts';

const url = await postgresForTests();

interface PlanCounts {
  statement: string;
  generic_plans: number;
  custom_plans: number;
}

/**
 * The statements that take a list of rows or ids (the audit link, the turn's request reads,
 * the turn's state reads) are planned once per connection, not on every run. Fed arrays of
 * varying length, PostgreSQL made a custom plan on every execution: a plan for 2 rows always
 * looked cheaper than the generic one, and planning the audit link cost more CPU than running
 * it (json-parameter.ts). Counted by PostgreSQL itself, in pg_prepared_statements.
 */
describe.skipIf(url === null)('PostgreSQL statements over lists keep one plan', () => {
  const schema = freshSchema('plans');
  afterAll(async () => {
    await dropSchema(schema);
  });

  it('after five custom plans each runs on the generic one, whatever the batch size', async () => {
    // One connection, so every statement is prepared, and counted, on the same backend.
    const store = await createPostgresStore({
      connectionString: url ?? TEST_PG_URL,
      schema,
      pool: { max: 1 },
      liveness: false,
    });
    const sent = vi.spyOn(pg.Client.prototype, 'query');
    try {
      const agent = decisionAgent(store);
      const ids: string[] = [];
      for (let i = 0; i < 16; i++)
        ids.push((await agent.chat(`plans-${i}`, 'Refund 1044.')).approvals[0]!.id);
      // Waves of 1 to 4 decisions at once: audit links of 1 to 4 transactions' events, request
      // reads of 1 to 4 ids (and an unknown one), state reads of 1 to 4 keys.
      for (const size of [1, 3, 2, 4, 1, 2, 3]) {
        const wave = ids.splice(0, size);
        const results = await Promise.all([
          ...wave.map((id) => agent.approve(id, { by: 'alice' })),
          store.getApprovalWithSession!('apr_unknown'),
        ]);
        expect(results.slice(0, size).map((result) => (result as { status: string }).status)).toEqual(
          wave.map(() => 'completed'),
        );
        expect(await store.getApprovalWithSession!(`apr_unknown_${size}`)).toBeNull();
        for (const round of [1, 2]) {
          const keys = Array.from({ length: size }, (_, i) => `missing-${size}-${round}-${i}`);
          expect(await Promise.all(keys.map((key) => store.getState('plans', key)))).toEqual(
            keys.map(() => undefined),
          );
        }
      }
      const clients = new Set(
        sent.mock.contexts.filter((client): client is pg.Client => client instanceof pg.Client),
      );
      expect(clients.size).toBe(1);
      const [client] = [...clients];
      const plans = (
        await client!.query<PlanCounts>(
          'SELECT statement, generic_plans::int, custom_plans::int FROM pg_prepared_statements',
        )
      ).rows;
      const named = (fragment: string) => {
        const found = plans.filter((row) => row.statement.includes(fragment));
        expect(found, fragment).toHaveLength(1);
        return found[0]!;
      };
      // The audit link, the request-with-session read, the state read.
      for (const fragment of [
        `FROM "${schema}".audit_head FOR UPDATE`,
        'AS session_row',
        'SELECT s.namespace, s.key, s.value',
      ]) {
        const { generic_plans, custom_plans } = named(fragment);
        // Ran often enough to matter, and at most the five custom plans PostgreSQL makes
        // before it compares them with the generic one.
        expect(generic_plans + custom_plans, fragment).toBeGreaterThan(8);
        expect(custom_plans, fragment).toBeLessThanOrEqual(5);
      }
    } finally {
      sent.mockRestore();
      await store.close();
    }
  });
});
