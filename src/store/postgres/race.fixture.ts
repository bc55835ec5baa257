// Child process of the cross-process tests. Every contender waits for a common start instant
// so they reach the database together, then does one thing and prints its outcome as JSON:
//   migrate URL SCHEMA NAME START_AT_MS            open (and so migrate) a fresh schema
//   decide  URL SCHEMA REQUEST BY START_AT_MS      approve one request
//   commit  URL SCHEMA SESSION OWNER START_AT_MS   commit one step computed against 0 messages
//   audit   URL SCHEMA NAME COUNT START_AT_MS      append COUNT pairs of audit events
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { storedEvent } from '../conformance/stored-event.ts';
import { createPostgresStore } from './postgres-store.ts';

const [mode, url, schema, a, b, c] = process.argv.slice(2);
if (!mode || !url || !schema || !a || !b) throw new Error('usage: race.fixture.ts MODE URL SCHEMA ...');

async function startTogether(startAtMs: string | undefined): Promise<void> {
  const wait = Number(startAtMs) - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

function print(value: unknown): void {
  process.stdout.write(JSON.stringify(value));
}

if (mode === 'migrate') {
  await import('pg');
  await startTogether(b);
  const store = await createPostgresStore({ connectionString: url, schema });
  await store.setState('race', a, true);
  await store.close();
  print({ ok: true });
} else {
  const store = await createPostgresStore({ connectionString: url, schema });
  try {
    if (mode === 'decide') {
      await startTogether(c);
      const at = new Date().toISOString();
      const result = await store.decide(a, { verdict: 'approved', by: b, reason: null, at, kind: 'person' }, [
        storedEvent({ kind: 'request.decided', session: 's1', requestId: a, actor: b, data: {} }),
      ]);
      print({ won: result.won, decidedBy: result.request?.decision?.by ?? null });
    } else if (mode === 'commit') {
      await startTogether(c);
      try {
        const record = await store.commitStep({
          session: a,
          leaseOwner: b,
          expectedMessageCount: 0,
          append: [{ role: 'user', text: `from ${process.pid}` }],
          at: new Date().toISOString(),
        });
        print({ ok: true, messageCount: record.messageCount });
      } catch (error) {
        if (!CountersignError.is(error)) throw error;
        print({ ok: false, code: error.code });
      }
    } else if (mode === 'audit') {
      await startTogether(c);
      for (let i = 0; i < Number(b); i++) {
        await store.appendAudit(
          [
            storedEvent({
              kind: 'request.raised',
              session: a,
              requestId: `${a}-${i}`,
              actor: a,
              data: { i },
            }),
            storedEvent({
              kind: 'request.decided',
              session: a,
              requestId: `${a}-${i}`,
              actor: a,
              data: { i },
            }),
          ],
          new Date().toISOString(),
        );
      }
      print({ ok: true });
    } else {
      throw new Error(`unknown mode ${mode}`);
    }
  } finally {
    await store.close();
  }
}
