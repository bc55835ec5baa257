// Child process of the cross-process race test: opens the shared file, waits for the common
// start instant so every contender reaches the write lock together, then tries to decide.
import { storedEvent } from '../conformance/stored-event.ts';
import { createSqliteStore } from './sqlite-store.ts';

const [path, session, requestId, by, startAtMs] = process.argv.slice(2);
if (!path || !session || !requestId || !by || !startAtMs) {
  throw new Error('usage: decide-race.fixture.ts PATH SESSION REQUEST_ID BY START_AT_MS');
}

const store = createSqliteStore({ path, busyTimeoutMs: 10_000 });
const wait = Number(startAtMs) - Date.now();
if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
const result = await store.decide(
  requestId,
  { verdict: 'approved', by, reason: null, at: new Date().toISOString(), kind: 'person' },
  [storedEvent({ kind: 'request.decided', session, requestId, actor: by, data: {} })],
);
await store.close();
process.stdout.write(JSON.stringify({ won: result.won, decidedBy: result.request?.decision?.by ?? null }));
