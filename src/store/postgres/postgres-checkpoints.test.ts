import { describe, expect, it } from 'vitest';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  TEST_PG_URL,
  withAdmin,
} from '../../../test/helpers/postgres.ts';
import { verifyAuditChain } from '../../core/audit.ts';
import {
  answerEvent,
  checkpoint,
  describeCheckpointStoreConformance,
} from '../conformance/checkpoint-store-conformance.ts';
import { answeredBy, portRequest } from '../conformance/fixtures.ts';
import { openCheckpointStore } from '../open-checkpoint-store.ts';
import { createPostgresStore } from './postgres-store.ts';

const url = await postgresForTests();

describe.skipIf(url === null)('PostgreSQL checkpoint store', () => {
  const connectionString = url ?? TEST_PG_URL;

  describeCheckpointStoreConformance({
    name: 'postgres',
    create: () => createPostgresStore({ connectionString, schema: freshSchema('cp') }),
    destroy: (store) => dropSchema(store.schema),
    audit: (store) => store.listAudit(),
  });

  it('an audit row the database refuses takes the answer with it; once it is allowed, both commit together', async () => {
    const schema = freshSchema('cp_audit');
    const store = await createPostgresStore({ connectionString, schema });
    const answer = answeredBy('mona', 20);
    await store.saveCheckpoint(checkpoint('r', 0), null, { requests: [portRequest('r', 'req_1')] });
    try {
      await withAdmin((client) =>
        client.query(`
          CREATE FUNCTION "${schema}".audit_refuses() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$;
          CREATE TRIGGER audit_refuses BEFORE INSERT ON "${schema}".audit
            FOR EACH ROW EXECUTE FUNCTION "${schema}".audit_refuses();`),
      );
      await expect(store.decide('req_1', answer, [answerEvent('mona')])).rejects.toThrow(/audit refused/);
      expect((await store.getApproval('req_1'))?.status).toBe('pending');
      expect(await store.listAudit()).toEqual([]);

      await withAdmin((client) => client.query(`DROP TRIGGER audit_refuses ON "${schema}".audit`));
      expect((await store.decide('req_1', answer, [answerEvent('mona')])).won).toBe(true);
      expect(await store.listAudit({ session: 'wf.r' })).toMatchObject([
        { kind: 'request.decided', actor: 'mona', requestId: 'req_1' },
      ]);
      expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
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
