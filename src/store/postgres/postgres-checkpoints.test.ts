import { describe, expect, it } from 'vitest';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  TEST_PG_URL,
  withAdmin,
} from '../../../test/helpers/postgres.ts';
import {
  checkpoint,
  describeCheckpointStoreConformance,
} from '../conformance/checkpoint-store-conformance.ts';
import { openCheckpointStore } from '../open-checkpoint-store.ts';
import { createPostgresStore } from './postgres-store.ts';

const url = await postgresForTests();

describe.skipIf(url === null)('PostgreSQL checkpoint store', () => {
  const connectionString = url ?? TEST_PG_URL;

  describeCheckpointStoreConformance('postgres', async () => {
    const schema = freshSchema('cp');
    return {
      store: await createPostgresStore({ connectionString, schema }),
      cleanup: () => dropSchema(schema),
    };
  });

  it("shares the agents' state table, and a damaged body names its row", async () => {
    const schema = freshSchema('cp_state');
    const store = await createPostgresStore({ connectionString, schema });
    try {
      await store.setState('bookstore', 'order:1040', { status: 'Delivered' });
      expect(await store.claimState('bookstore', 'order:1040', 'x')).toEqual({
        won: false,
        value: { status: 'Delivered' },
      });
      await store.saveCheckpoint(checkpoint('r', 0), null);
      await withAdmin((client) =>
        client.query(`UPDATE "${schema}".workflow_checkpoints SET body = '{"trunc' WHERE id = 'cp-r-0'`),
      );
      await expect(store.latestCheckpoint('r')).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
      await expect(store.latestCheckpoint('r')).rejects.toThrow(/workflow_checkpoints\(id=cp-r-0\)/);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });

  it('openCheckpointStore(postgres://…) returns the PostgreSQL store', async () => {
    const schema = freshSchema('cp_open');
    const store = await openCheckpointStore(`${connectionString}?schema=${schema}`);
    try {
      expect(store.kind).toBe('postgres');
      expect((await store.saveCheckpoint(checkpoint('r', 0), null)).saved).toBe(true);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });
});
