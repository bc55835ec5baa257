import { createHash } from 'node:crypto';
import { ConfigError } from '../../core/errors/config-error.ts';
import { type Tables, tableNames } from '../sql/tables.ts';

export const DEFAULT_SCHEMA = 'countersign';

// Lower case only: an unquoted mention of the schema in psql then names the same schema,
// and 63 bytes is PostgreSQL's identifier limit (longer names are silently truncated).
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** Refuses anything but a plain lower-case identifier, so quoting it can never be the only defence. */
export function assertSchemaName(name: string): string {
  if (!SCHEMA_PATTERN.test(name) || name.startsWith('pg_')) {
    throw new ConfigError(`"${name}" is not a usable PostgreSQL schema name for countersign.`, {
      hint: 'Use 1-63 characters: lower-case letters, digits and underscores, not starting with a digit or "pg_" (set with ?schema=NAME or COUNTERSIGN_PG_SCHEMA).',
    });
  }
  return name;
}

export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The key of the advisory lock that serializes migrations of one schema: 64 bits of a hash
 * of the name, so stores in different schemas of one database migrate independently.
 * Returned as a decimal string because pg sends it as a bigint parameter.
 */
export function migrationLockKey(schema: string): string {
  const digest = createHash('sha256').update(`countersign:migrate:${schema}`).digest();
  return digest.readBigInt64BE(0).toString();
}

/**
 * Schema-qualified names, written into every statement: nothing depends on the connection's
 * search_path, so a pooler that hands connections around cannot point a store elsewhere.
 */
export function tablesIn(schema: string): Tables {
  return tableNames((table) => `${quoteIdentifier(schema)}.${table}`);
}
