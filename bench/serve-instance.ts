import { createInterface } from 'node:readline';
import { createServer } from '../src/server/create-server.ts';
import { startServer } from '../src/server/start-server.ts';
import { createPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { decisionAgent } from './decision-agent.ts';
import { countedStore, installPgCounter, pgCounts, resetPgCounts } from './pg-round-trips.ts';

/**
 * One `serve` instance of bench/instances.ts: the server `countersign serve` builds, on the
 * PostgreSQL schema given, with the bench's agent. Prints {"url"} once listening; on the
 * line `reset` zeroes its counters, on `stop` prints its CPU time and statements since the
 * reset and exits.
 */
const [connectionString, schema, token] = process.argv.slice(2) as [string, string, string];
installPgCounter();
const inner = await createPostgresStore({ connectionString, schema, pool: { max: 16 } });
const store = countedStore(inner);
const server = createServer({
  agents: [decisionAgent(store)],
  store,
  approvers: [{ name: 'bench', roles: [], token }],
  log: () => undefined,
});
const running = await startServer(server, { host: '127.0.0.1', port: 0 });
let cpu = process.cpuUsage();
process.stdout.write(`${JSON.stringify({ url: running.url })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'reset') {
    resetPgCounts();
    cpu = process.cpuUsage();
    process.stdout.write('reset\n');
  } else if (line === 'stop') {
    const used = process.cpuUsage(cpu);
    const { statements, roundTrips, transactions, socketWrites, byMethod } = pgCounts();
    process.stdout.write(
      `${JSON.stringify({ cpuUs: used.user + used.system, statements, roundTrips, transactions, socketWrites, byMethod })}\n`,
    );
    await running.close();
    await inner.close();
    process.exit(0);
  }
}
