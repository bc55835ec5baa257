import { readFileSync } from 'node:fs';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { decisionAgent } from './decision-agent.ts';

/** One contending process: tries to approve every request; prints how many it won. */
const [path, idsFile, name] = process.argv.slice(2) as [string, string, string];
const ids = JSON.parse(readFileSync(idsFile, 'utf8')) as string[];
const store = createSqliteStore({ path, busyTimeoutMs: 30_000 });
const agent = decisionAgent(store);
let won = 0;
let lost = 0;
for (const id of ids) {
  try {
    await agent.approve(id, { by: name });
    won += 1;
  } catch (error) {
    if ((error as { code?: string }).code !== 'ALREADY_DECIDED') throw error;
    lost += 1;
  }
}
await store.close();
process.stdout.write(JSON.stringify({ won, lost }));
