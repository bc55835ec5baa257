import { afterAll, describe, expect, it } from 'vitest';
import { verifyAuditChain } from '../../src/core/audit.ts';
import { at } from '../../src/store/conformance/fixtures.ts';
import { storedEvent } from '../../src/store/conformance/stored-event.ts';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL } from '../helpers/postgres.ts';

const url = await postgresForTests();

/*
 * d64c934: after five runs PostgreSQL keeps the audit link's generic plan. The links written
 * on that plan, one connection, batches of 1 to 70 events (and many writes linked together by
 * the group commit), must chain and verify as the custom plans' do.
 */
describe.skipIf(url === null)('PostgreSQL: audit links on the generic plan', () => {
  const schema = freshSchema('attack_generic');
  afterAll(async () => {
    await dropSchema(schema);
  });

  it('chains every batch, whatever its size, and concurrent writes linked together', async () => {
    const store = await createPostgresStore({
      connectionString: url ?? TEST_PG_URL,
      schema,
      pool: { max: 1 },
      liveness: false,
    });
    try {
      let seconds = 0;
      const sizes = [1, 2, 3, 5, 8, 13, 1, 70, 2, 64, 65, 1];
      for (const size of sizes) {
        seconds += 1;
        await store.appendAudit(
          Array.from({ length: size }, (_, i) =>
            storedEvent({
              kind: 'request.raised',
              session: `s"${size}\\`,
              requestId: i % 3 === 0 ? null : `r${seconds}-${i}`,
              actor: `a😀${i}`,
              data: { i, text: '{"x":[1,"\\u0000"]}', nul: '\u0000' },
            }),
          ),
          at(seconds),
        );
      }
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          store.appendAudit(
            [
              storedEvent({
                kind: 'request.decided',
                session: `c${i}`,
                requestId: `c${i}`,
                actor: 'x',
                data: { i },
              }),
              storedEvent({ kind: 'request.decided', session: null, requestId: null, actor: 'y', data: {} }),
            ],
            at(100 + i),
          ),
        ),
      );
      const entries = await store.listAudit();
      const total = sizes.reduce((sum, size) => sum + size, 0) + 200;
      expect(entries).toHaveLength(total);
      expect(entries.map((entry) => entry.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
      expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: total });
    } finally {
      await store.close();
    }
  });
});
