import type { TextSearchState } from '../ports/text-search-state.ts';
import type { Connection } from './connection.ts';
import { migrationLockKey, quoteIdentifier } from './schema-name.ts';

/** The trigram indexes migration 016 builds (text_search_indexes()). */
export const TEXT_SEARCH_INDEXES = ['approvals_effect_trgm', 'approvals_customer_trgm'] as const;

/**
 * Whether text search is indexed, after the migrations ran. One catalog read when it is. When
 * it is not (migration 016 found no pg_trgm and could not install it), the migration's function
 * is asked again under the migration lock: an administrator may have installed pg_trgm since,
 * and then this start builds the indexes (CREATE INDEX holds writes to `approvals` while it
 * runs, about a second per 100,000 requests). Otherwise the reason is returned, for the
 * server's one log line; nothing here fails the open, the lists walk instead.
 */
export async function ensureTextSearch(connection: Connection, schema: string): Promise<TextSearchState> {
  const quoted = quoteIdentifier(schema);
  const present = await connection.query(
    `SELECT count(*) = ${TEXT_SEARCH_INDEXES.length} AS indexed FROM unnest($1::text[]) AS name WHERE to_regclass(name) IS NOT NULL`,
    [TEXT_SEARCH_INDEXES.map((index) => `${quoted}.${index}`)],
  );
  if (present[0]?.indexed === true) return { indexed: true };
  try {
    const reason = await connection.withClient(async (query) => {
      await query('BEGIN');
      try {
        await query('SELECT pg_advisory_xact_lock($1::bigint)', [migrationLockKey(schema)]);
        const rows = await query(`SELECT ${quoted}.text_search_indexes() AS reason`);
        await query('COMMIT');
        return rows[0]?.reason;
      } catch (error) {
        await query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
    return typeof reason === 'string' ? { indexed: false, reason } : { indexed: true };
  } catch (error) {
    return {
      indexed: false,
      reason: `the trigram indexes could not be checked: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}
