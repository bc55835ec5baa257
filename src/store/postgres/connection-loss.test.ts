import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL } from '../../../test/helpers/postgres.ts';
import { verifyAuditChain } from '../../core/audit.ts';
import { createPostgresStore } from './postgres-store.ts';

const url = await postgresForTests();

interface Outcome {
  inFlight: { ok: number; unavailable: number; other: string[] };
  terminated: number;
  recoveryMs: number;
  after: { ok: number; failed: number };
  messages: string[];
}

function runFixture(schema: string, app: string, rounds: number): Promise<Outcome> {
  const script = fileURLToPath(new URL('connection-loss.fixture.ts', import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [script, url ?? TEST_PG_URL, schema, app, String(rounds)],
      { timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`connection-loss.fixture.ts died (${error.message}):\n${stderr}`));
        else resolve(JSON.parse(stdout) as Outcome);
      },
    );
  });
}

describe.skipIf(url === null)('PostgreSQL store when its connections are terminated', () => {
  const schema = freshSchema('connloss');
  afterAll(() => dropSchema(schema));

  it('fails in-flight calls with STORE_UNAVAILABLE, survives, recovers and keeps its data whole', async () => {
    const app = `cs_test_connloss_${randomBytes(4).toString('hex')}`;
    const outcome = await runFixture(schema, app, 5);

    // The process lived to print this; every call either succeeded or said STORE_UNAVAILABLE.
    expect(outcome.inFlight.other).toEqual([]);
    expect(outcome.terminated).toBeGreaterThanOrEqual(5);
    expect(outcome.inFlight.unavailable).toBeGreaterThan(0);
    expect(outcome.inFlight.ok).toBeGreaterThan(0);
    expect(outcome.recoveryMs).toBeGreaterThanOrEqual(0);
    expect(outcome.after).toEqual({ ok: 30, failed: 0 });
    for (const message of outcome.messages) {
      expect(message).toMatch(/was lost while a statement was running/);
      expect(message).toMatch(/Try again in a moment: countersign opens a new connection by itself/);
    }
    console.log(
      `connection loss: ${outcome.inFlight.ok} ok, ${outcome.inFlight.unavailable} STORE_UNAVAILABLE of ` +
        `${outcome.inFlight.ok + outcome.inFlight.unavailable} calls, ${outcome.terminated} backends ` +
        `terminated in 5 rounds, first success ${outcome.recoveryMs.toFixed(1)} ms after the last`,
    );

    // No half-written decision: a request is decided exactly when its audit event exists.
    const store = await createPostgresStore({ connectionString: url ?? TEST_PG_URL, schema });
    try {
      const audit = await store.listAudit();
      expect(verifyAuditChain(audit).ok).toBe(true);
      const decidedEvents = new Map<string, number>();
      for (const entry of audit) {
        if (entry.kind === 'request.decided' && entry.requestId !== null)
          decidedEvents.set(entry.requestId, (decidedEvents.get(entry.requestId) ?? 0) + 1);
      }
      const approvals = await store.listApprovals();
      expect(approvals).toHaveLength(200);
      for (const approval of approvals) {
        const events = decidedEvents.get(approval.id) ?? 0;
        expect({ id: approval.id, status: approval.status, events }).toEqual({
          id: approval.id,
          status: events === 1 ? 'approved' : 'pending',
          events: events === 1 ? 1 : 0,
        });
      }
      expect([...decidedEvents.values()].every((count) => count === 1)).toBe(true);
    } finally {
      await store.close();
    }
  }, 90_000);
});
