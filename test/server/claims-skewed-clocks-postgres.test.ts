import { afterAll, describe, expect, it, vi } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL } from '../helpers/postgres.ts';
import { raiseCancel, type TestServer, testServer } from './helpers.ts';

const pg = await postgresForTests();

const HOUR = 3_600_000;
/** The claims' term: short, so a lapse is waited for, not faked. */
const TERM = 1500;
/** How long after its term a free request may still be refused: a poll, a round trip, a slow CI. */
const SLACK = 3000;

/**
 * Two server instances on one PostgreSQL schema whose clocks (their `now`) disagree with the
 * database server's by an hour each way. Claims run on the server's clock (storeNow), so a
 * claim taken on one lapses at the same moment for the other: a host an hour ahead cannot
 * take it before its term, and one an hour behind is not kept out for an hour after it. On
 * each host's own clock, the first took it at once and the second waited two hours.
 */
describe.skipIf(pg === null)('request claims across hosts whose clocks disagree (PostgreSQL)', () => {
  const schema = freshSchema('claim_clock');
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await dropSchema(schema);
  });

  async function host(offsetMs: number): Promise<{ server: TestServer; store: PostgresStore }> {
    const store = await createPostgresStore({ connectionString: pg ?? TEST_PG_URL, schema });
    const server = testServer({ store, now: () => new Date(Date.now() + offsetMs) });
    closers.push(async () => {
      await server.close();
      await store.close();
    });
    return { server, store };
  }

  for (const [holderOff, takerOff, story] of [
    [-HOUR, +HOUR, 'a host an hour ahead does not take it early from one an hour behind'],
    [+HOUR, -HOUR, 'a host an hour behind takes it at its term from one an hour ahead, not hours later'],
  ] as const) {
    it(story, async () => {
      const holder = await host(holderOff);
      const taker = await host(takerOff);
      const clock = () => holder.store.liveness.now();
      const id = await raiseCancel(holder.server, `skew-${holderOff > 0 ? 'ahead' : 'behind'}`);

      const before = await clock();
      const held = await holder.server.call('POST', `/v1/requests/${id}/claim`, {
        as: 'alice',
        body: { for: TERM },
      });
      const after = await clock();
      expect(held.status).toBe(200);
      expect(held.json.claim.by).toBe('alice');
      // At once, from the other host: refused, and the claim stays alice's.
      const early = await taker.server.call('POST', `/v1/requests/${id}/claim`, {
        as: 'mia',
        body: { for: TERM },
      });
      expect(early.json.error?.code).toBe('CLAIMED');
      expect(early.status).toBe(409);
      expect((await taker.store.getApproval(id))?.claim).toEqual(held.json.claim);
      // Its term counts from now on the database server's clock, not the holder's.
      const until = Date.parse(held.json.claim.until);
      expect(until).toBeGreaterThanOrEqual(before + TERM - 250);
      expect(until).toBeLessThanOrEqual(after + TERM + 250);

      // Then mia asks until she holds it: not before alice's term ends, and soon after it.
      let taken: Awaited<ReturnType<TestServer['call']>> | undefined;
      await vi.waitFor(
        async () => {
          const attempt = await taker.server.call('POST', `/v1/requests/${id}/claim`, {
            as: 'mia',
            body: { for: TERM },
          });
          expect(attempt.status).toBe(200);
          taken = attempt;
        },
        { timeout: TERM + SLACK + 2000, interval: 50 },
      );
      const won = await clock();
      expect(won - until).toBeLessThan(SLACK);
      // The answer shows the claim mia just won, though her host's clock is an hour off.
      expect(taken?.json.claim.by).toBe('mia');

      // The trail: each claim's entry at the moment it was judged (the server's clock), with
      // the term as stored; mia's came at or after alice's term ended.
      const entries = (await holder.store.listAudit()).filter(
        (entry) => entry.requestId === id && entry.kind === 'request.claimed',
      );
      expect(entries.map((entry) => entry.actor)).toEqual(['alice', 'mia']);
      const [alices, mias] = entries as [(typeof entries)[0], (typeof entries)[0]];
      expect(alices.data).toMatchObject({ until: held.json.claim.until });
      expect(Date.parse(alices.at)).toBe(until - TERM);
      expect(Date.parse(mias.at)).toBeGreaterThanOrEqual(until);
      // (`won` is read by the holder's process: each reads the server's clock to within a round trip.)
      expect(Date.parse(mias.at)).toBeLessThanOrEqual(won + 50);
      const stored = await holder.store.getApproval(id);
      expect(stored?.claim).toEqual({ by: 'mia', until: (mias.data as { until: string }).until });
      expect(Date.parse(stored!.claim!.until) - Date.parse(mias.at)).toBe(TERM);
    }, 20_000);
  }
});
