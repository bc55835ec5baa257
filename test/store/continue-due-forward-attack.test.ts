import { afterAll, describe, expect, it } from 'vitest';
import type { OpenBatch } from '../../src/core/session.ts';
import { assistantCalling, at, atMs, byPerson, request } from '../../src/store/conformance/fixtures.ts';
import { storedEvent } from '../../src/store/conformance/stored-event.ts';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import type { Store } from '../../src/store/store.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL, withAdmin } from '../helpers/postgres.ts';

const url = await postgresForTests();
const now = atMs(500);

/** 017 undone, as a store migrated by 016 has it (014's deferred trigger on every batch change). */
const AT_016 = `
  DROP TRIGGER sessions_batch_closed ON sessions;
  DROP FUNCTION sessions_batch_closed();
  DROP TRIGGER sessions_batch_due ON sessions;
  CREATE CONSTRAINT TRIGGER sessions_batch_due AFTER UPDATE OF batch ON sessions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.batch IS DISTINCT FROM NEW.batch) EXECUTE FUNCTION sessions_continue_due();
  DELETE FROM migrations WHERE version = 17;`;

async function waiting(store: Store, session: string, ids: string[], principal = 'alice', seconds = 10) {
  await store.ensureSession({ id: session, agent: 'bookstore', principal, at: at(0) });
  await store.acquireLease({ session, owner: 'run-1', untilMs: atMs(seconds + 1), nowMs: atMs(seconds - 1) });
  await openBatch(store, session, ids, 'run-1', 0, seconds);
}

async function openBatch(
  store: Store,
  session: string,
  ids: string[],
  owner: string,
  count: number,
  seconds: number,
) {
  const approvals = ids.map((id) => request({ id, session }));
  const batch: OpenBatch = {
    messageSeq: count,
    calls: approvals.map((approval) => ({
      callId: approval.callId,
      tool: approval.tool,
      args: approval.args,
      disposition: { kind: 'approval', approvalId: approval.id },
    })),
  };
  await store.commitStep({
    session,
    leaseOwner: owner,
    expectedMessageCount: count,
    append: [assistantCalling(approvals[0]!.callId, 'place_order', approvals[0]!.args)],
    batch,
    approvals,
    audit: ids.map((id) =>
      storedEvent({ kind: 'request.raised', session, requestId: id, actor: 'model', data: { id } }),
    ),
    releaseLease: true,
    at: at(seconds),
  });
}

async function closeBatch(store: Store, session: string, seconds: number) {
  const current = await store.getSession(session);
  await store.acquireLease({
    session,
    owner: `run-${seconds}`,
    untilMs: atMs(seconds + 1),
    nowMs: atMs(seconds),
  });
  await store.commitStep({
    session,
    leaseOwner: `run-${seconds}`,
    expectedMessageCount: current!.messageCount,
    append: [{ role: 'assistant', text: 'done' }],
    batch: null,
    releaseLease: true,
    at: at(seconds),
  });
}

const expire = (store: Store, id: string) =>
  store.decide(id, { verdict: 'expired', by: 'countersign', reason: 'expired', at: at(200), kind: 'expiry' });

const stalled = async (store: Store) =>
  (await store.listStalledSessions({ nowMs: now })).map((session) => session.id).sort();

async function flagsAgree(schema: string): Promise<unknown[]> {
  return withAdmin(
    async (client) =>
      (
        await client.query(
          `SELECT s.id, s.continue_due FROM "${schema}".sessions s
            WHERE (s.continue_due IS NOT NULL) IS DISTINCT FROM
                  (s.batch IS NOT NULL AND NOT EXISTS (
                     SELECT 1 FROM "${schema}".approvals a WHERE a.session = s.id AND a.status = 'pending'))`,
        )
      ).rows,
  );
}

/*
 * Migration 017 on a store that 016 left with sessions in every state of the stalled-session
 * flag: due ones stay due, and the flag follows raise, decide, expiry, continue, import and
 * erasure after it.
 */
describe.skipIf(url === null)('PostgreSQL migration 017 over a store migrated by 016', () => {
  const connectionString = url ?? TEST_PG_URL;
  const schemas: string[] = [];
  const open: PostgresStore[] = [];
  afterAll(async () => {
    for (const store of open) await store.close().catch(() => undefined);
    for (const schema of schemas) await dropSchema(schema);
  });

  it('sessions due before stay due, and the flag stays right through the flows after', async () => {
    const schema = freshSchema('due_fwd');
    schemas.push(schema);
    const old = await createPostgresStore({ connectionString, schema, liveness: false });
    open.push(old);
    await withAdmin(async (client) => {
      await client.query('BEGIN');
      await client.query(`SET LOCAL search_path TO "${schema}"`);
      await client.query(AT_016);
      await client.query('COMMIT');
    });
    // At 016: one session in each state.
    await waiting(old, 'due', ['due-1']);
    await old.decide('due-1', byPerson('approved', 20));
    await waiting(old, 'held', ['held-1', 'held-2']);
    await old.decide('held-1', byPerson('approved', 20));
    await waiting(old, 'closed', ['closed-1']);
    await old.decide('closed-1', byPerson('rejected', 20));
    await closeBatch(old, 'closed', 30);
    await waiting(old, 'expired', ['expired-1'], 'bob');
    await expire(old, 'expired-1');
    await waiting(old, 'moved', ['moved-1']);
    await old.decide('moved-1', byPerson('approved', 20));
    const snapshot = await old.exportSession('moved');
    expect(await stalled(old)).toEqual(['due', 'expired', 'moved']);
    expect(await flagsAgree(schema)).toEqual([]);
    await old.close();

    // 017 applied by the next store to open the schema.
    const store = await createPostgresStore({ connectionString, schema, liveness: false });
    open.push(store);
    const versions = await withAdmin(
      async (client) =>
        (await client.query(`SELECT max(version)::int AS v FROM "${schema}".migrations`)).rows[0]?.v,
    );
    expect(versions).toBe(17);
    expect(await stalled(store)).toEqual(['due', 'expired', 'moved']);
    expect(await flagsAgree(schema)).toEqual([]);

    // Decide the last pending one: due. Continue a due one: no longer.
    await store.decide('held-2', byPerson('approved', 40));
    expect(await stalled(store)).toEqual(['due', 'expired', 'held', 'moved']);
    await closeBatch(store, 'due', 41);
    expect(await stalled(store)).toEqual(['expired', 'held', 'moved']);
    // A closed session opens a batch again (pending: hidden), it is decided (due), and in one
    // step a run settles the batch and opens the next one (hidden again).
    await store.acquireLease({ session: 'closed', owner: 'run-r', untilMs: atMs(43), nowMs: atMs(42) });
    await openBatch(store, 'closed', ['closed-2'], 'run-r', 2, 42);
    expect(await stalled(store)).toEqual(['expired', 'held', 'moved']);
    await expire(store, 'closed-2');
    expect(await stalled(store)).toEqual(['closed', 'expired', 'held', 'moved']);
    await store.acquireLease({ session: 'closed', owner: 'run-s', untilMs: atMs(45), nowMs: atMs(44) });
    await openBatch(store, 'closed', ['closed-3'], 'run-s', 3, 44);
    expect(await stalled(store)).toEqual(['expired', 'held', 'moved']);
    // A batch replaced by another with nothing pending is due straight away.
    await store.acquireLease({ session: 'held', owner: 'run-t', untilMs: atMs(47), nowMs: atMs(46) });
    await store.commitStep({
      session: 'held',
      leaseOwner: 'run-t',
      expectedMessageCount: 1,
      append: [{ role: 'assistant', text: 'next' }],
      batch: { messageSeq: 1, calls: [] },
      releaseLease: true,
      at: at(46),
    });
    expect(await stalled(store)).toEqual(['expired', 'held', 'moved']);
    // Erasure removes bob's session.
    await store.erasePrincipal({
      principal: 'bob',
      at: at(60),
      audit: (removed) => [
        storedEvent({
          kind: 'principal.erased',
          session: null,
          requestId: null,
          actor: 'admin',
          data: { ...removed },
        }),
      ],
    });
    expect(await stalled(store)).toEqual(['held', 'moved']);
    expect(await flagsAgree(schema)).toEqual([]);

    // The exported session, imported into a store created at 017, is due there.
    const otherSchema = freshSchema('due_fwd_imp');
    schemas.push(otherSchema);
    const other = await createPostgresStore({ connectionString, schema: otherSchema, liveness: false });
    open.push(other);
    await other.importSession(snapshot!);
    expect(await stalled(other)).toEqual(['moved']);
    await closeBatch(other, 'moved', 70);
    expect(await stalled(other)).toEqual([]);
    expect(await flagsAgree(otherSchema)).toEqual([]);
    expect(await flagsAgree(schema)).toEqual([]);
  });
});
