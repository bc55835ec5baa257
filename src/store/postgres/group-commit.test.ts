import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { countedStore, installPgCounter, pgCounts, resetPgCounts } from '../../../bench/pg-round-trips.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL } from '../../../test/helpers/postgres.ts';
import { verifyAuditChain } from '../../core/audit.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { createEncryption } from '../../crypto/encryption.ts';
import { envKeyProvider } from '../../crypto/env-key-provider.ts';
import { at, byPerson, event, leasedSession, raise, request } from '../conformance/fixtures.ts';
import { storedEvent } from '../conformance/stored-event.ts';
import type { StandingRule, Store } from '../store.ts';
import { createPostgresStore } from './postgres-store.ts';

const url = await postgresForTests();
installPgCounter();

const SESSIONS = 4;
const PER_SESSION = 6;

function ruleFor(id: string, session: string, sourceRequest: string): StandingRule {
  return {
    id,
    session,
    sourceRequest,
    tool: 'place_order',
    toolIdentity: 'place_order:3f1c9a',
    argsHash: null,
    createdAt: at(20),
    createdBy: 'alice',
    revokedAt: null,
    revokedBy: null,
  };
}

/**
 * Concurrent writes of one process share transactions (group-commit.ts). These pin what that
 * must not change: each write still stands or falls alone, a decided request has exactly one
 * audit event, the chain stays whole, and fewer transactions than writes were needed.
 */
describe.skipIf(url === null)('PostgreSQL group commit', () => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(schema);
  });

  /** SESSIONS leased sessions with PER_SESSION pending requests each (r<s>-<i>). */
  async function seedRequests(store: Store) {
    for (let s = 0; s < SESSIONS; s++) {
      await leasedSession(store, `s${s}`);
      await raise(
        store,
        `s${s}`,
        Array.from({ length: PER_SESSION }, (_, i) => request({ id: `r${s}-${i}`, session: `s${s}` })),
      );
    }
  }

  async function storeWithRequests() {
    const schema = freshSchema('groupcommit');
    schemas.push(schema);
    const inner = await createPostgresStore({ connectionString: url ?? TEST_PG_URL, schema });
    await seedRequests(inner);
    return { inner, store: countedStore(inner) };
  }

  it('one failing write in a shared transaction fails alone; the others commit, once each', async () => {
    const { inner, store } = await storeWithRequests();
    try {
      const ids = Array.from(
        { length: SESSIONS * PER_SESSION },
        (_, n) => `r${n % SESSIONS}-${Math.floor(n / SESSIONS)}`,
      );
      const sessionOf = (id: string) => `s${id.slice(1, id.indexOf('-'))}`;
      // r1-0's rule names another session: that decision must throw and leave nothing behind.
      const bad = 'r1-0';
      resetPgCounts();
      const outcomes = await Promise.allSettled([
        ...ids.map((id) =>
          store.decide(
            id,
            byPerson('approved', 20),
            [event('request.decided', sessionOf(id), id)],
            id === bad
              ? { rule: ruleFor('rule-bad', 's0', id) }
              : { rule: ruleFor(`rule-${id}`, sessionOf(id), id) },
          ),
        ),
        // The same request twice at once, inside the same batch or not: exactly one wins.
        store.decide('r0-0', byPerson('rejected', 21), [event('request.decided', 's0', 'r0-0')]),
      ]);
      const { transactions } = pgCounts();
      const failed = outcomes.flatMap((outcome, i) =>
        outcome.status === 'rejected' ? [[i, outcome.reason]] : [],
      );
      expect(failed).toHaveLength(1);
      const [index, reason] = failed[0] as [number, unknown];
      expect(ids[index]).toBe(bad);
      expect(CountersignError.is(reason) && reason.code).toBe('INVALID_INPUT');
      const results = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
      // 23 other requests won, and of the two decisions of r0-0 exactly one did.
      expect(results.filter((result) => result.won)).toHaveLength(ids.length - 1);
      expect(results.filter((result) => !result.won).map((result) => result.request?.id)).toEqual(['r0-0']);

      expect((await inner.getApproval(bad))?.status).toBe('pending');
      expect(await inner.getRule('rule-bad')).toBeNull();
      const audit = await inner.listAudit();
      expect(verifyAuditChain(audit).ok).toBe(true);
      const decided = audit
        .filter((entry) => entry.kind === 'request.decided')
        .map((entry) => entry.requestId);
      expect(new Set(decided).size).toBe(decided.length);
      expect([...decided].sort()).toEqual(ids.filter((id) => id !== bad).sort());
      for (const id of ids.filter((id) => id !== bad))
        expect((await inner.getRule(`rule-${id}`))?.session).toBe(sessionOf(id));
      // 25 decisions; alone they would be 25 transactions plus the failed batch's retries.
      console.log(`25 concurrent decisions (one failing) took ${transactions} transactions`);
      expect(transactions).toBeLessThan(25);
    } finally {
      await inner.close();
    }
  });

  it('concurrent decisions share transactions: at most a third of one each, two round trips per transaction', async () => {
    const { inner, store } = await storeWithRequests();
    try {
      const ids = Array.from(
        { length: SESSIONS * PER_SESSION },
        (_, n) => `r${n % SESSIONS}-${Math.floor(n / SESSIONS)}`,
      );
      resetPgCounts();
      await Promise.all(
        ids.map((id) =>
          store.decide(
            id,
            byPerson('approved', 20),
            [event('request.decided', `s${id.slice(1, id.indexOf('-'))}`, id)],
            {
              lease: { owner: 'run-1', untilMs: Date.now() + 60_000, nowMs: Date.now() },
            },
          ),
        ),
      );
      const { transactions, roundTrips } = pgCounts();
      console.log(
        `${ids.length} concurrent decisions: ${transactions} transactions, ${roundTrips} round trips`,
      );
      expect(transactions).toBeLessThanOrEqual(ids.length / 3);
      // Per transaction: BEGIN with the decisions' statements (all sent at once), then the
      // one audit link with the COMMIT behind it.
      expect(roundTrips).toBeLessThanOrEqual(2 * transactions);
      expect(verifyAuditChain(await inner.listAudit()).ok).toBe(true);
    } finally {
      await inner.close();
    }
  });

  it('two processes linking in turn: each link is one statement with the COMMIT behind it, and the chain verifies', async () => {
    const { inner: a } = await storeWithRequests();
    // A second process on the same schema: its links move the head between A's.
    const b = await createPostgresStore({
      connectionString: url ?? TEST_PG_URL,
      schema: schemas.at(-1)!,
    });
    try {
      const counted = countedStore(a);
      for (let i = 0; i < 4; i++) {
        await b.appendAudit([event('request.decided', 's1', null)], at(2));
        resetPgCounts();
        const result = await counted.decide(
          `r0-${i}`,
          byPerson('approved', 20),
          [event('request.decided', 's0', `r0-${i}`)],
          { lease: { owner: 'run-1', untilMs: Date.now() + 60_000, nowMs: Date.now() } },
        );
        expect(result.won).toBe(true);
        // BEGIN with the decision, then the link with COMMIT: no head read, whoever linked last.
        expect(pgCounts()).toMatchObject({ statements: 4, roundTrips: 2, transactions: 1 });
      }
      const audit = await a.listAudit();
      const verified = verifyAuditChain(audit);
      expect(verified.ok).toBe(true);
      expect(verified.ok && verified.entries).toBe(8);
      const decided = audit.flatMap((entry) =>
        entry.kind === 'request.decided' && entry.requestId !== null ? [entry.requestId] : [],
      );
      expect(decided).toEqual(['r0-0', 'r0-1', 'r0-2', 'r0-3']);
      expect(audit.map((entry) => entry.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    } finally {
      await b.close();
      await a.close();
    }
  });

  it('links entries whose strings hold quotes, escapes and any Unicode: PostgreSQL hashes what verifyAuditChain checks', async () => {
    const { inner } = await storeWithRequests();
    try {
      const odd = ['"seq":0', 'a\\"seq":0,"x', 'line\nbreak\u2028', 'café 🍵 Ω', '"', '\\', ''];
      await inner.appendAudit(
        odd.map((text) =>
          storedEvent({
            kind: 'request.decided',
            session: text,
            requestId: text === '' ? null : text,
            actor: text,
            data: { note: text },
          }),
        ),
        at(3),
      );
      await Promise.all(
        odd.map((text, i) => inner.appendAudit([event('request.decided', `s${i}`, text)], at(4))),
      );
      const audit = await inner.listAudit();
      expect(audit).toHaveLength(2 * odd.length);
      expect(verifyAuditChain(audit).ok).toBe(true);
    } finally {
      await inner.close();
    }
  });

  it('a pipelined batch: two decisions of one request (one wins, one audit event), a write failing in the middle (it fails alone; the others commit once)', async () => {
    const { inner, store } = await storeWithRequests();
    try {
      const lease = () => ({ owner: 'run-1', untilMs: Date.now() + 60_000, nowMs: Date.now() });
      // In flight first, so the decisions below queue behind it and share the next transaction.
      const first = store.appendAudit([event('request.decided', 's3', null)], at(1));
      const outcomes = await Promise.allSettled([
        store.decide('r0-0', byPerson('approved', 20), [event('request.decided', 's0', 'r0-0')], {
          lease: lease(),
          loadRun: true,
        }),
        store.decide('r0-0', byPerson('rejected', 21, 'bob'), [event('request.decided', 's0', 'r0-0')], {
          lease: lease(),
        }),
        // PostgreSQL text cannot hold a NUL: this decision's statement fails (22021) in the middle.
        store.decide(
          'r1-0',
          byPerson('approved', 20, 'nul\u0000name'),
          [event('request.decided', 's1', 'r1-0')],
          {
            lease: lease(),
          },
        ),
        store.decide('r2-0', byPerson('approved', 20), [event('request.decided', 's2', 'r2-0')], {
          lease: lease(),
          loadRun: true,
        }),
        store.decide('r0-0', byPerson('approved', 22, 'carol'), [event('request.decided', 's0', 'r0-0')]),
        store.appendAudit([event('request.decided', 's3', null)], at(2)),
      ]);
      await first;
      const [a, b, bad, c, d, appended] = outcomes;
      expect(bad?.status).toBe('rejected');
      const reason = (bad as PromiseRejectedResult).reason;
      expect(CountersignError.is(reason) && reason.code).toBe('INVALID_INPUT');
      expect(appended?.status).toBe('fulfilled');
      const results = [a, b, c, d].map((outcome) => {
        expect(outcome?.status).toBe('fulfilled');
        return (outcome as PromiseFulfilledResult<Awaited<ReturnType<typeof store.decide>>>).value;
      });
      // Of r0-0's three decisions exactly one won; r2-0's did.
      expect([results[0], results[1], results[3]].filter((result) => result?.won)).toHaveLength(1);
      expect(results[2]?.won).toBe(true);
      expect((await inner.getApproval('r1-0'))?.status).toBe('pending');
      const audit = await inner.listAudit();
      expect(verifyAuditChain(audit).ok).toBe(true);
      const decided = audit.flatMap((entry) =>
        entry.kind === 'request.decided' && entry.requestId !== null ? [entry.requestId] : [],
      );
      expect(decided.sort()).toEqual(['r0-0', 'r2-0']);
      expect(audit.filter((entry) => entry.requestId === null)).toHaveLength(2);
    } finally {
      await inner.close();
    }
  });

  it('two store instances on one schema deciding and appending at once: every request decided once with one audit event, the chain verifies, no event lost', async () => {
    const { inner: a } = await storeWithRequests();
    const b = await createPostgresStore({ connectionString: url ?? TEST_PG_URL, schema: schemas.at(-1)! });
    try {
      const ids = Array.from(
        { length: SESSIONS * PER_SESSION },
        (_, n) => `r${n % SESSIONS}-${Math.floor(n / SESSIONS)}`,
      );
      const sessionOf = (id: string) => `s${id.slice(1, id.indexOf('-'))}`;
      const lease = () => ({ owner: 'run-1', untilMs: Date.now() + 60_000, nowMs: Date.now() });
      const APPENDS = 40;
      const calls: Promise<unknown>[] = [];
      for (const store of [a, b]) {
        for (const id of ids) {
          calls.push(
            store.decide(
              id,
              byPerson('approved', 20, store === a ? 'alice' : 'bob'),
              [event('request.decided', sessionOf(id), id)],
              { lease: lease() },
            ),
          );
        }
        for (let i = 0; i < APPENDS; i++)
          calls.push(store.appendAudit([event('request.decided', null, null)], at(3)));
      }
      const outcomes = await Promise.allSettled(calls);
      expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
      const won = outcomes.flatMap((outcome) =>
        outcome.status === 'fulfilled' && (outcome.value as { won?: boolean } | undefined)?.won === true
          ? [(outcome.value as { request: { id: string } }).request.id]
          : [],
      );
      expect(won.sort()).toEqual([...ids].sort());
      const audit = await a.listAudit();
      expect(verifyAuditChain(audit).ok).toBe(true);
      expect(audit.map((entry) => entry.seq)).toEqual(audit.map((_, i) => i + 1));
      const decided = audit.flatMap((entry) => (entry.requestId !== null ? [entry.requestId] : []));
      expect(decided.sort()).toEqual([...ids].sort());
      expect(audit.filter((entry) => entry.requestId === null)).toHaveLength(2 * APPENDS);
    } finally {
      await b.close();
      await a.close();
    }
  }, 60_000);

  it('with the encrypting codec, a second instance that has loaded no key decides in pipelined batches: each request once, one audit event each, runs loaded', async () => {
    const keys = `k1:${randomBytes(32).toString('base64')}`;
    const schema = freshSchema('groupcommit');
    schemas.push(schema);
    const open = async () => {
      const encryption = createEncryption(envKeyProvider(keys));
      return encryption.wrap(
        await createPostgresStore({ connectionString: url ?? TEST_PG_URL, schema, codec: encryption.codec }),
      );
    };
    const first = await open();
    await seedRequests(first);
    const sibling = await open();
    try {
      const ids = Array.from(
        { length: SESSIONS * PER_SESSION },
        (_, n) => `r${n % SESSIONS}-${Math.floor(n / SESSIONS)}`,
      );
      const sessionOf = (id: string) => `s${id.slice(1, id.indexOf('-'))}`;
      const outcomes = await Promise.allSettled(
        ids.flatMap((id) => [
          sibling.decide(id, byPerson('approved', 20), [event('request.decided', sessionOf(id), id)], {
            lease: { owner: 'run-1', untilMs: Date.now() + 60_000, nowMs: Date.now() },
            loadRun: true,
          }),
          sibling.appendAudit([event('request.decided', sessionOf(id), null)], at(3)),
        ]),
      );
      expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
      const decisions = outcomes.filter((_, i) => i % 2 === 0) as PromiseFulfilledResult<
        Awaited<ReturnType<typeof sibling.decide>>
      >[];
      for (const { value } of decisions) {
        expect(value.won).toBe(true);
        expect(value.won && value.run?.messages.length).toBe(PER_SESSION);
      }
      const audit = await first.listAudit();
      expect(verifyAuditChain(audit).ok).toBe(true);
      const decided = audit.flatMap((entry) => (entry.requestId !== null ? [entry.requestId] : []));
      expect(decided.sort()).toEqual([...ids].sort());
      expect(audit.filter((entry) => entry.requestId === null)).toHaveLength(ids.length);
    } finally {
      await sibling.close();
      await first.close();
    }
  }, 60_000);

  it('writes without audit events, with none in flight, run at once in autocommit, not queued', async () => {
    const { inner, store } = await storeWithRequests();
    try {
      resetPgCounts();
      // Sixteen sessions' tools writing at once: none waits for another's transaction (queued,
      // 16 stepping sessions ran at 0.36-0.43x the steps/s).
      await Promise.all(Array.from({ length: 16 }, (_, i) => store.setState('t', `k${i}`, i)));
      const { transactions, roundTrips } = pgCounts();
      expect({ transactions, roundTrips }).toEqual({ transactions: 16, roundTrips: 16 });
      expect(await inner.getState('t', 'k15')).toBe(15);
    } finally {
      await inner.close();
    }
  });
});
