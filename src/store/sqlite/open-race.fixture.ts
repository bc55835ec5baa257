// Child process of the fresh-file test: every contender opens the same not-yet-existing
// file at the same instant, so creating the schema races between processes.
import { createSqliteStore } from './sqlite-store.ts';

const [path, name, startAtMs] = process.argv.slice(2);
if (!path || !name || !startAtMs) throw new Error('usage: open-race.fixture.ts PATH NAME START_AT_MS');

const wait = Number(startAtMs) - Date.now();
if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
const store = createSqliteStore({ path, busyTimeoutMs: 10_000 });
await store.setState('open-race', name, true);
await store.close();
process.stdout.write('ok');
