import { describe } from 'vitest';
import { ALL_STORE_SUITES, describeStoreConformance } from '../../src/store/conformance/store-conformance.ts';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL, withAdmin } from '../helpers/postgres.ts';

const url = await postgresForTests();

/**
 * The whole PostgreSQL conformance suite again, and after each case the stalled-session flag
 * (migrations 014 and 017) is checked against its definition on every session the case left:
 * `continue_due` is set exactly while the session has an open batch and no pending request.
 * A flag left null where it should be set would hide a stalled session from every sweep.
 */
async function checkFlags(schema: string): Promise<void> {
  const wrong = await withAdmin(
    async (client) =>
      (
        await client.query(
          `SELECT s.id, s.batch IS NOT NULL AS open, s.continue_due,
                  EXISTS (SELECT 1 FROM "${schema}".approvals a WHERE a.session = s.id AND a.status = 'pending') AS pending
             FROM "${schema}".sessions s
            WHERE (s.continue_due IS NOT NULL) IS DISTINCT FROM
                  (s.batch IS NOT NULL AND NOT EXISTS (
                     SELECT 1 FROM "${schema}".approvals a WHERE a.session = s.id AND a.status = 'pending'))`,
        )
      ).rows,
  );
  if (wrong.length > 0)
    throw new Error(`continue_due disagrees with its definition: ${JSON.stringify(wrong)}`);
}

describe.skipIf(url === null)('PostgreSQL: continue_due after every conformance case', () => {
  const connectionString = url ?? TEST_PG_URL;
  describeStoreConformance<PostgresStore>(
    {
      name: 'postgres, flag checked',
      create: () => createPostgresStore({ connectionString, schema: freshSchema('due_inv') }),
      destroy: async (store) => {
        try {
          await checkFlags(store.schema);
        } finally {
          await dropSchema(store.schema);
        }
      },
      sibling: (store) => createPostgresStore({ connectionString, schema: store.schema }),
    },
    { suites: ALL_STORE_SUITES },
  );
});
