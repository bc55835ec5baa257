import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { loopRow, timeLoop } from './agent-loop.ts';

/** The server the bench uses: COUNTERSIGN_BENCH_PG, COUNTERSIGN_TEST_PG, or the local one. */
export const BENCH_PG_URL =
  process.env.COUNTERSIGN_BENCH_PG?.trim() ||
  process.env.COUNTERSIGN_TEST_PG?.trim() ||
  'postgres://postgres@127.0.0.1:5432/postgres';

export interface PostgresLoopRow {
  store: 'postgres';
  steps: number;
  stepsPerSecond: number;
  firstDecileMsPerStep: number;
  lastDecileMsPerStep: number;
  lastOverFirst: number;
  logicalBytes: number;
  /** messages table with its index and TOAST, as PostgreSQL reports it */
  storedBytes: number;
  storedOverLogical: number;
  cpuUsPerStep: number;
}

/** Runs `work` on a short-lived connection of its own, outside any store. */
export async function admin<T>(
  work: (client: pg.Client) => Promise<T>,
  connectionString = BENCH_PG_URL,
): Promise<T> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Why PostgreSQL cannot be benchmarked here, or null when it answers. */
export async function postgresProblem(): Promise<string | null> {
  try {
    await admin((client) => client.query('SELECT 1'));
    return null;
  } catch (error) {
    return (error as Error).message || String(error);
  }
}

const freshSchema = (label: string) => `cs_bench_${label}_${randomBytes(4).toString('hex')}`;
const dropSchema = (schema: string) =>
  admin((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));

/**
 * bench/agent-loop.ts's loop on PostgreSQL: the zero-latency scripted model calls `note`
 * `steps` times, and every step is one durable commit (the fenced UPDATE + INSERT statement).
 */
export async function runPostgresLoop(steps: number): Promise<PostgresLoopRow> {
  const schema = freshSchema(`loop${steps}`);
  const store = await createPostgresStore({ connectionString: BENCH_PG_URL, schema });
  try {
    const timing = await timeLoop(store, steps);
    const storedBytes = await admin(async (client) => {
      const { rows } = await client.query<{ bytes: string }>(
        `SELECT pg_total_relation_size('"${schema}".messages') AS bytes`,
      );
      return Number(rows[0]?.bytes ?? 0);
    });
    return loopRow('postgres', timing, storedBytes);
  } finally {
    await store.close();
    await dropSchema(schema);
  }
}

/**
 * The ceiling, measured in the same run: one connection, one prepared INSERT of a message-sized
 * row per transaction (autocommit), so each is one round trip and one WAL flush.
 */
export async function rawPostgresCommits(
  count: number,
  connectionString = BENCH_PG_URL,
): Promise<{ commitsPerSecond: number }> {
  const schema = freshSchema('raw');
  try {
    return await admin(async (client) => {
      await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(`CREATE TABLE "${schema}".raw (id bigserial PRIMARY KEY, body text NOT NULL)`);
      const body = `{"role":"assistant","text":"${'x'.repeat(160)}"}`;
      const insert = {
        name: 'raw_insert',
        text: `INSERT INTO "${schema}".raw (body) VALUES ($1)`,
        values: [body],
      };
      const started = performance.now();
      for (let i = 0; i < count; i++) await client.query(insert);
      const elapsed = performance.now() - started;
      return { commitsPerSecond: Math.round(count / (elapsed / 1000)) };
    }, connectionString);
  } finally {
    await dropSchema(schema);
  }
}

export type PostgresBench =
  | { skipped: string }
  | { loop: PostgresLoopRow[]; rawPostgres: { commitsPerSecond: number } };

function medianBy<T>(rows: T[], key: (row: T) => number): T {
  return [...rows].sort((a, b) => key(a) - key(b))[Math.floor(rows.length / 2)]!;
}

/**
 * The PostgreSQL section of `npm run bench`: measures, prints its tables and returns what goes
 * into the JSON result. Without a server it prints one line and skips, except under CI.
 */
export async function benchPostgres(repeats: number, sizes: readonly number[]): Promise<PostgresBench> {
  const problem = await postgresProblem();
  if (problem !== null) {
    const message = `PostgreSQL bench skipped: ${problem}. Start PostgreSQL on 127.0.0.1:5432 or set COUNTERSIGN_BENCH_PG.`;
    if (process.env.CI) throw new Error(message);
    console.log(`\n${message}`);
    return { skipped: problem };
  }
  const loop: PostgresLoopRow[] = [];
  for (const steps of sizes) {
    const runs: PostgresLoopRow[] = [];
    for (let i = 0; i < repeats; i++) runs.push(await runPostgresLoop(steps));
    loop.push(medianBy(runs, (row) => row.stepsPerSecond));
  }
  const rawRuns: Array<{ commitsPerSecond: number }> = [];
  for (let i = 0; i < repeats; i++) rawRuns.push(await rawPostgresCommits(2000));
  const rawPostgres = medianBy(rawRuns, (row) => row.commitsPerSecond);

  console.log(`\nAgent loop on PostgreSQL, one durable commit per step (median of ${repeats} runs)\n`);
  console.table(
    loop.map((row) => ({
      N: row.steps,
      'steps/s': row.stepsPerSecond,
      'first-decile ms/step': row.firstDecileMsPerStep,
      'last-decile ms/step': row.lastDecileMsPerStep,
      'last/first': row.lastOverFirst,
      'of raw commits/s': `${Math.round((row.stepsPerSecond / rawPostgres.commitsPerSecond) * 100)}%`,
      'CPU µs/step': row.cpuUsPerStep,
      'logical bytes': row.logicalBytes,
      'stored bytes': row.storedBytes,
      'stored/logical': row.storedOverLogical,
    })),
  );
  const largest = loop.at(-1);
  console.log(
    `Raw PostgreSQL commits (one connection, one INSERT per transaction): ${rawPostgres.commitsPerSecond}/s`,
  );
  if (largest !== undefined) {
    console.log(
      `Agent steps at N=${largest.steps} on PostgreSQL: ${largest.stepsPerSecond}/s = ${Math.round((largest.stepsPerSecond / rawPostgres.commitsPerSecond) * 100)}% of the raw commit rate`,
    );
  }
  return { loop, rawPostgres };
}
