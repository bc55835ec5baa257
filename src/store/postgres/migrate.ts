import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import type { Connection, Query } from './connection.ts';
import { migrationLockKey, quoteIdentifier } from './schema-name.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const MIGRATIONS_DIR = join(import.meta.dirname, 'migrations');
let cached: readonly Migration[] | undefined;

/**
 * The numbered files in `migrations/` (NNN_name.sql), in order. A gap or a duplicate number
 * is a packaging mistake, refused before anything touches the database.
 */
export function loadMigrations(): readonly Migration[] {
  if (cached !== undefined) return cached;
  let files: string[] = [];
  try {
    files = readdirSync(MIGRATIONS_DIR)
      .filter((file) => file.endsWith('.sql'))
      .sort();
  } catch {
    // A missing directory is reported below, as an empty one is.
  }
  if (files.length === 0) {
    // A compiled build that copied only the .ts output ends up here.
    throw new Error(
      `The PostgreSQL migrations are missing at ${MIGRATIONS_DIR}; a build must copy src/store/postgres/migrations/*.sql next to migrate.js.`,
    );
  }
  const migrations = files.map((file, index) => {
    const match = /^(\d+)_([a-z0-9_]+)\.sql$/.exec(file);
    const version = Number(match?.[1]);
    if (match === null || version !== index + 1) {
      throw new Error(`Migration file ${file} is out of sequence: expected number ${index + 1}.`);
    }
    return { version, name: match[2] ?? file, sql: readFileSync(join(MIGRATIONS_DIR, file), 'utf8') };
  });
  cached = migrations;
  return migrations;
}

function tooNew(target: string, seen: number, known: number): StoreUnavailableError {
  return new StoreUnavailableError(
    `The store at ${target} has schema version ${seen}, newer than this countersign knows (${known}).`,
    { hint: 'Upgrade countersign, or check COUNTERSIGN_STORE and the schema point at the intended store.' },
  );
}

function versionOf(rows: readonly Record<string, unknown>[]): number {
  return Number(rows[0]?.version ?? 0);
}

/** Missing schema or table: the store has never been migrated here. */
function isUndefinedObject(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '42P01' || code === '3F000';
}

/**
 * Brings `schema` up to the newest migration. Each migration runs in a transaction of its
 * own under a transaction-scoped advisory lock keyed by the schema name, and the applied
 * version is read again under the lock, so processes starting together on a fresh database
 * apply every migration exactly once and the losers simply find the work done.
 *
 * An up-to-date store is recognised with one query and no lock, so a role without CREATE
 * rights can use a schema its owner migrated.
 */
export async function migrate(connection: Connection, schema: string, target: string): Promise<void> {
  const migrations = loadMigrations();
  const latest = migrations.length;
  const quoted = quoteIdentifier(schema);
  const table = `${quoted}.migrations`;
  try {
    const seen = versionOf(await connection.query(`SELECT max(version) AS version FROM ${table}`));
    if (seen > latest) throw tooNew(target, seen, latest);
    if (seen === latest) return;
  } catch (error) {
    if (!isUndefinedObject(error)) throw error;
  }
  await connection.withClient(async (query: Query) => {
    for (;;) {
      await query('BEGIN');
      await query('SELECT pg_advisory_xact_lock($1::bigint)', [migrationLockKey(schema)]);
      // Under the lock: concurrent CREATE SCHEMA IF NOT EXISTS can otherwise fail on a duplicate key.
      // Only when missing: CREATE SCHEMA checks the CREATE privilege on the database even when
      // the schema exists, and a role an administrator gave a schema of its own (and nothing
      // more) can then migrate it.
      const exists = await query('SELECT to_regnamespace($1) IS NOT NULL AS present', [quoted]);
      if (exists[0]?.present !== true) await query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
      await query(
        `CREATE TABLE IF NOT EXISTS ${table} (
           version integer PRIMARY KEY,
           name text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const seen = versionOf(await query(`SELECT max(version) AS version FROM ${table}`));
      if (seen > latest) {
        await query('ROLLBACK');
        throw tooNew(target, seen, latest);
      }
      const next = migrations[seen];
      if (next === undefined) {
        await query('COMMIT');
        return;
      }
      await query(`SET LOCAL search_path TO ${quoted}`);
      await query(next.sql);
      await query(`INSERT INTO ${table} (version, name) VALUES ($1, $2)`, [next.version, next.name]);
      await query('COMMIT');
    }
  });
}
