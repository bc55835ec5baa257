import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyAuditChain } from '../../src/core/audit.ts';
import { CountersignError } from '../../src/core/errors/countersign-error.ts';
import { fireDueNudges } from '../../src/requests/fire-nudges.ts';
import { at, atMs, leasedSession, raise, request } from '../../src/store/conformance/fixtures.ts';
import { nudgePlan } from '../../src/store/conformance/timer-cases.ts';
import type { RequestTimers } from '../../src/store/ports/request-timers.ts';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  TEST_PG_URL,
  terminateBackends,
  withAdmin,
  withApplicationName,
} from '../helpers/postgres.ts';

/**
 * A PostgreSQL store whose connection is ended in the middle of firing a nudge: the nudge's
 * compare-and-set has run, its audit append waits for the chain's head (held by another
 * connection), and the backend is terminated there. Nothing may be half-written (no nudge
 * marked sent without its entry), and the next pass fires it exactly once.
 */
const url = await postgresForTests();

describe.skipIf(url === null)('a nudge when the PostgreSQL connection drops mid-fire', () => {
  const schema = freshSchema('nudgeloss');
  afterAll(() => dropSchema(schema));

  it('writes nothing of a lost nudge or claim, and fires the nudge once on the next pass', async () => {
    const app = `cs_test_nudgeloss_${randomBytes(4).toString('hex')}`;
    const store = await createPostgresStore({
      connectionString: withApplicationName(url ?? TEST_PG_URL, app),
      schema,
    });
    try {
      await leasedSession(store, 's1');
      await raise(store, 's1', [request({ id: 'r1', session: 's1', nudges: nudgePlan() })]);
      const reminders = async () =>
        (await store.listAudit()).filter((entry) => entry.kind === 'request.reminder').length;

      // Another connection holds the audit chain's head: the change's transaction runs its
      // UPDATE, then waits to append its entry. That is where its connection is ended.
      const endedMidway = (work: () => Promise<unknown>) =>
        withAdmin(async (admin) => {
          await admin.query('BEGIN');
          await admin.query(`SELECT seq FROM "${schema}".audit_head FOR UPDATE`);
          const running = work().then(
            () => null,
            (error: unknown) => error,
          );
          for (let tries = 0; ; tries++) {
            // Inside a transaction pg_stat_activity is a snapshot taken once: drop it each time.
            await admin.query('SELECT pg_stat_clear_snapshot()');
            const { rows } = await admin.query(
              `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
              [app],
            );
            if (rows.length > 0) break;
            if (tries > 500) throw new Error('the change never waited for the audit head');
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
          expect(await terminateBackends(app)).toBeGreaterThan(0);
          const error = await running;
          await admin.query('ROLLBACK');
          return error;
        });
      const lost = await endedMidway(() => fireDueNudges({ store, now: new Date(atMs(31)) }));
      expect(CountersignError.is(lost) && lost.code).toBe('STORE_UNAVAILABLE');

      // Nothing half-written: the row's reminder is unsent and there is no entry for it.
      expect((await store.getApproval('r1'))?.nudges).toEqual(nudgePlan());
      expect(await reminders()).toBe(0);

      // A claim lost the same way leaves the request unclaimed and unaudited.
      const claim = { by: 'alice', at: at(31), claim: { by: 'alice', until: at(60) } };
      const lostClaim = await endedMidway(() =>
        store.changeClaim('r1', claim, [
          {
            kind: 'request.claimed',
            session: 's1',
            requestId: 'r1',
            actor: 'alice',
            data: { until: at(60), previous: null },
          },
        ]),
      );
      expect(CountersignError.is(lostClaim) && lostClaim.code).toBe('STORE_UNAVAILABLE');
      expect((await store.getApproval('r1'))?.claim).toBeNull();
      expect((await store.listAudit()).map((entry) => entry.kind)).not.toContain('request.claimed');

      // Two processes' next passes (the store reconnects by itself): the reminder fires once.
      const other = await createPostgresStore({ connectionString: url ?? TEST_PG_URL, schema });
      try {
        const passes = await Promise.all([
          fireDueNudges({ store, now: new Date(atMs(32)) }),
          fireDueNudges({ store: other as RequestTimers, now: new Date(atMs(32)) }),
        ]);
        expect(passes.flat().map((event) => event.type)).toEqual(['request.reminder']);
      } finally {
        await other.close();
      }
      expect(await reminders()).toBe(1);
      expect((await store.getApproval('r1'))?.nudges?.remindedAt).toBe(at(32));
      expect(await fireDueNudges({ store, now: new Date(atMs(33)) })).toEqual([]);
      expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
    } finally {
      await store.close();
    }
  });
});
