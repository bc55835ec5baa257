// Child process of connection-loss.test.ts, so that "the process survives" means what it says:
// an unheard 'error' event would end this process with a non-zero exit code.
//   connection-loss.fixture.ts URL SCHEMA APPLICATION_NAME ROUNDS
// Opens a store whose connections carry APPLICATION_NAME, keeps decisions, audit appends and
// reads in flight from 8 callers, and ROUNDS times terminates every backend with that name
// (and no other: other tests share the server). Prints one JSON line with the outcome of
// every call, the time to the first success after the last termination, and then checks that
// a round of calls on a quiet store all succeed.
import pg from 'pg';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { byPerson, leasedSession, raise, request } from '../conformance/fixtures.ts';
import { storedEvent } from '../conformance/stored-event.ts';
import { createPostgresStore } from './postgres-store.ts';

const [url, schema, app, roundsText] = process.argv.slice(2);
if (!url || !schema || !app || !roundsText) throw new Error('usage: URL SCHEMA APPLICATION_NAME ROUNDS');
const rounds = Number(roundsText);
const named = `${url}${url.includes('?') ? '&' : '?'}application_name=${app}`;

const store = await createPostgresStore({ connectionString: named, schema, pool: { max: 8 } });
const admin = new pg.Client({ connectionString: url });
admin.on('error', () => {});
await admin.connect();

const SESSIONS = 20;
const PER_SESSION = 10;
for (let s = 0; s < SESSIONS; s++) {
  await leasedSession(store, `s${s}`);
  await raise(
    store,
    `s${s}`,
    Array.from({ length: PER_SESSION }, (_, i) => request({ id: `r${s}-${i}`, session: `s${s}` })),
  );
}
const ids = Array.from(
  { length: SESSIONS * PER_SESSION },
  (_, n) => `r${Math.floor(n / PER_SESSION)}-${n % PER_SESSION}`,
);

const outcomes = { ok: 0, unavailable: 0, other: [] as string[] };
const hints = new Set<string>();
let next = 0;

/** One call of the mix: a decision (a transaction with its audit event), an audit append, a read. */
async function call(n: number): Promise<void> {
  const kind = n % 3;
  if (kind === 0) {
    const id = ids[(n / 3) % ids.length] as string;
    const session = `s${id.slice(1, id.indexOf('-'))}`;
    await store.decide(id, byPerson('approved', 20), [
      storedEvent({ kind: 'request.decided', session, requestId: id, actor: 'alice', data: {} }),
    ]);
  } else if (kind === 1) {
    await store.appendAudit(
      [
        storedEvent({
          kind: 'execution.started',
          session: null,
          requestId: null,
          actor: 'load',
          data: { n },
        }),
      ],
      new Date().toISOString(),
    );
  } else {
    await store.listApprovals({ status: 'pending' });
  }
}

async function attempt(n: number): Promise<boolean> {
  try {
    await call(n);
    outcomes.ok++;
    return true;
  } catch (error) {
    if (CountersignError.is(error) && error.code === 'STORE_UNAVAILABLE') {
      outcomes.unavailable++;
      hints.add(error.message.replace(/\(PostgreSQL: [^)]*\)/, '(PostgreSQL: …)'));
    } else outcomes.other.push(String(error));
    return false;
  }
}

let stop = false;
const callers = Array.from({ length: 8 }, async () => {
  while (!stop) await attempt(next++);
});

// Terminations are paced by completed calls, not by the clock: each round waits for the
// store to have done more work since the last one.
let terminated = 0;
let lastTermination = 0;
for (let round = 0; round < rounds; round++) {
  const before = outcomes.ok;
  while (outcomes.ok < before + 20) await new Promise((resolve) => setImmediate(resolve));
  const { rowCount } = await admin.query(
    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
    [app],
  );
  terminated += rowCount ?? 0;
  lastTermination = performance.now();
}
stop = true;
await Promise.all(callers);
const inFlight = { ...outcomes, other: [...outcomes.other] };

// Recovery: the first call after the last termination that succeeds.
let recoveryMs = -1;
for (let i = 0; i < 1000; i++) {
  if (await attempt(next++)) {
    recoveryMs = performance.now() - lastTermination;
    break;
  }
}
const after = { ok: 0, failed: 0 };
for (let i = 0; i < 30; i++) {
  const before = outcomes.ok;
  await attempt(next++);
  if (outcomes.ok > before) after.ok++;
  else after.failed++;
}

await admin.end();
await store.close();
process.stdout.write(
  `${JSON.stringify({ inFlight, terminated, recoveryMs, after, messages: [...hints] })}\n`,
);
