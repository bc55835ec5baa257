import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** The server the PostgreSQL tests use: COUNTERSIGN_TEST_PG, or the local one with trust auth. */
export const TEST_PG_URL =
  process.env.COUNTERSIGN_TEST_PG?.trim() || 'postgres://postgres@127.0.0.1:5432/postgres';

const onCi = (process.env.CI ?? '') !== '' && process.env.CI !== 'false' && process.env.CI !== '0';

/** The URL without its password, for messages. */
function shown(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return 'COUNTERSIGN_TEST_PG';
  }
}

let reachable: Promise<string | null> | undefined;

/**
 * Test files run in separate worker processes of one vitest run; the first to claim a marker
 * named after that run (the parent's pid and start time) prints the skip line, the rest stay
 * quiet. Where /proc is missing every file prints it.
 */
function firstToSkipInThisRun(): boolean {
  try {
    const started = readFileSync(`/proc/${process.ppid}/stat`, 'utf8').split(') ')[1]?.split(' ')[19];
    closeSync(openSync(join(tmpdir(), `countersign-pg-skip-${process.ppid}-${started}`), 'wx'));
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'EEXIST';
  }
}

async function probe(): Promise<string | null> {
  const client = new pg.Client({ connectionString: TEST_PG_URL, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return (error as Error).message || String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The server URL when PostgreSQL answers, or null when it does not and the file's tests
 * should skip; then one line says how to run them. Under CI the tests must never skip
 * silently, so an unreachable server fails the file instead.
 */
export function postgresForTests(): Promise<string | null> {
  reachable ??= probe().then((problem) => {
    if (problem === null) return TEST_PG_URL;
    if (onCi) {
      throw new Error(
        `PostgreSQL tests cannot run under CI: ${shown(TEST_PG_URL)} is unreachable (${problem}).`,
      );
    }
    if (!firstToSkipInThisRun()) return null;
    console.warn(
      `PostgreSQL tests skipped: nothing answers at ${shown(TEST_PG_URL)} (${problem}). ` +
        'To run them, start PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth) or set COUNTERSIGN_TEST_PG=postgres://USER:PASSWORD@HOST:PORT/DATABASE.',
    );
    return null;
  });
  return reachable;
}

/** A schema name no other test or run uses: `cs_test_<label>_<random>`. */
export function freshSchema(label: string): string {
  const clean = label
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 30);
  return `cs_test_${clean}_${randomBytes(5).toString('hex')}`;
}

/** Runs `work` on a short-lived connection of its own (outside any store). */
export async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_PG_URL, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function dropSchema(schema: string): Promise<void> {
  await withAdmin((client) =>
    client.query(`DROP SCHEMA IF EXISTS "${schema.replaceAll('"', '""')}" CASCADE`),
  );
}

/** A COUNTERSIGN_STORE value naming the test server and `schema`. */
export function storeUrl(schema: string): string {
  return `${TEST_PG_URL}${TEST_PG_URL.includes('?') ? '&' : '?'}schema=${schema}`;
}

/**
 * Ends every backend whose application_name is `applicationName` — the connections of the
 * one process a test gave that name, never those of other tests sharing the server.
 * Resolves with how many were terminated.
 */
export async function terminateBackends(applicationName: string): Promise<number> {
  return withAdmin(async (client) => {
    const { rows } = await client.query<{ ended: boolean }>(
      'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()',
      [applicationName],
    );
    return rows.filter((row) => row.ended).length;
  });
}

/**
 * The backend holding the liveness lock of the process `pid` (its connection is named
 * `countersign-liveness <pid> <token>`, src/liveness/postgres/postgres-liveness.ts), with the
 * name, or null while it holds none. Throws if more than one matches.
 */
export async function livenessBackend(pid: number): Promise<{ pid: number; name: string } | null> {
  return withAdmin(async (client) => {
    const { rows } = await client.query<{ pid: number; name: string }>(
      `SELECT a.pid, a.application_name AS name FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
        WHERE a.application_name LIKE $1 AND l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted`,
      [`countersign-liveness ${pid} pg%`],
    );
    if (rows.length > 1) throw new Error(`${rows.length} liveness backends for process ${pid}`);
    return rows[0] ?? null;
  });
}

/** Ends the one backend `backend` names (livenessBackend), by its pid; true when it did. */
export async function terminateBackend(backend: { pid: number }): Promise<boolean> {
  return withAdmin(async (client) => {
    const { rows } = await client.query<{ ended: boolean }>('SELECT pg_terminate_backend($1) AS ended', [
      backend.pid,
    ]);
    return rows[0]?.ended === true;
  });
}

/** The pids of the backends named `applicationName` whose last statement was `query`. */
export async function backendsRunning(applicationName: string, query: string): Promise<number[]> {
  return withAdmin(async (client) => {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query = $2 ORDER BY pid',
      [applicationName, query],
    );
    return rows.map((row) => row.pid);
  });
}

/** `url` with `application_name` set, so a test can find (and end) that process's connections. */
export function withApplicationName(url: string, applicationName: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}application_name=${applicationName}`;
}

/**
 * Waits until one of the backends named `applicationName` is running a statement (one whose
 * text contains `busyWith`, when given), then ends them all, so the termination lands on work
 * in flight. Resolves with how many were ended, or 0 if none was busy within `timeoutMs`.
 */
export async function terminateBackendsWhenBusy(
  applicationName: string,
  options: { busyWith?: string; timeoutMs?: number } = {},
): Promise<number> {
  return withAdmin(async (client) => {
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    while (Date.now() < deadline) {
      const { rows } = await client.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
          WHERE application_name = $1 AND pid <> pg_backend_pid()
            AND EXISTS (SELECT 1 FROM pg_stat_activity
                         WHERE application_name = $1 AND state = 'active' AND position($2 in query) > 0)`,
        [applicationName, options.busyWith ?? ''],
      );
      const ended = rows.filter((row) => row.ended).length;
      if (ended > 0) return ended;
    }
    return 0;
  });
}
