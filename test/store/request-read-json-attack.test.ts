import { afterAll, describe, expect, it } from 'vitest';
import { CountersignError } from '../../src/core/errors/countersign-error.ts';
import { at, atMs, request } from '../../src/store/conformance/fixtures.ts';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL } from '../helpers/postgres.ts';

const url = await postgresForTests();

/*
 * d64c934: the request-with-session read takes its ids as one json parameter
 * (id = ANY (ARRAY(SELECT json_array_elements_text($1::json)))). Many ids in one turn (more than
 * one statement's 64), duplicates, unknown ids, ids that look like JSON or array syntax, a lone
 * surrogate (stored as U+FFFD) and a NUL (which PostgreSQL text cannot hold).
 */
describe.skipIf(url === null)('PostgreSQL: requests read together by id', () => {
  const schema = freshSchema('attack_reads');
  afterAll(async () => {
    await dropSchema(schema);
  });

  it('finds each, whatever else is read in the same turn', async () => {
    const store = await createPostgresStore({
      connectionString: url ?? TEST_PG_URL,
      schema,
      liveness: false,
    });
    try {
      const odd = ['r"q', 'r\\x', 'r,{a}', '["r"]', 'NULL', 'r\ud800', 'r😀', ' '];
      const ids = [...Array.from({ length: 70 }, (_, i) => `r${i}`), ...odd];
      await store.ensureSession({ id: 's1', agent: 'bookstore', principal: null, at: at(0) });
      await store.acquireLease({ session: 's1', owner: 'run-1', untilMs: atMs(1000), nowMs: atMs(0) });
      await store.commitStep({
        session: 's1',
        leaseOwner: 'run-1',
        expectedMessageCount: 0,
        append: [],
        batch: { messageSeq: 0, calls: [] },
        approvals: ids.map((id) => request({ id, session: 's1' })),
        releaseLease: true,
        at: at(10),
      });
      const asked = [...ids, 'r3', 'r3', 'r69', 'r\ufffd', 'unknown', 'r\udfff', ...ids.slice(0, 5)];
      const read = await Promise.all(asked.map((id) => store.getApprovalWithSession!(id)));
      const expected = (id: string) => {
        if (id === 'unknown') return null;
        if (id === 'r\ud800' || id === 'r\ufffd' || id === 'r\udfff') return 'r\ufffd';
        return id;
      };
      expect(read.map((found) => found?.request.id ?? null)).toEqual(asked.map(expected));
      expect(read.every((found) => found === null || found.session?.id === 's1')).toBe(true);

      // A NUL fails its own caller, typed; the others in the turn are read.
      const mixed = await Promise.allSettled(
        ['r1', 'r\u0000', 'r2'].map((id) => store.getApprovalWithSession!(id)),
      );
      expect(
        mixed.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value?.request.id : 'failed')),
      ).toEqual(['r1', 'failed', 'r2']);
      const reason = (mixed[1] as PromiseRejectedResult).reason;
      expect(CountersignError.is(reason) && reason.code).toBe('INVALID_INPUT');
    } finally {
      await store.close();
    }
  });
});
