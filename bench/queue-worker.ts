import { createPgBossQueue } from '../src/queue/pg-boss/pg-boss-queue.ts';
import { createPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { decisionAgent } from './decision-agent.ts';

/** One worker process of bench/queue.ts: continues sessions from the queue until SIGTERM. */
const [connectionString, schema] = process.argv.slice(2) as [string, string];
const store = await createPostgresStore({ connectionString, schema });
const agent = decisionAgent(store);
const queue = await createPgBossQueue({ connectionString, schema: `${schema}_queue` });
let continued = 0;
await queue.work(
  async (job) => {
    await agent.resume(job.session);
    continued += 1;
  },
  { concurrency: Number(process.env.BENCH_WORKER_CONCURRENCY ?? 2) },
);
// CPU from here on: the worker's share of continuing, not its start-up.
const cpu = process.cpuUsage();
process.stdout.write('ready\n');
process.once('SIGTERM', async () => {
  await queue.close();
  await store.close();
  const used = process.cpuUsage(cpu);
  process.stdout.write(`${JSON.stringify({ continued, cpuUs: used.user + used.system })}\n`);
  process.exit(0);
});
