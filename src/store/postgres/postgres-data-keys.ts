import type { DataKeys } from '../ports/data-keys.ts';
import { DATA_KEY_COLUMNS, dataKeyValues, toDataKey } from '../sql/data-key-rows.ts';
import type { Query } from './connection.ts';
import { first } from './row-queries.ts';

/** The `data_keys` table (migration 010): wrapped data keys of the encrypting codec. */
export function createPostgresDataKeys(query: Query, table: string): DataKeys {
  const live = async (q: Query, owner: string) => {
    const row = first(
      await q(
        `SELECT ${DATA_KEY_COLUMNS} FROM ${table} WHERE owner = $1 AND wrapped IS NOT NULL ORDER BY created_at, id LIMIT 1`,
        [owner],
      ),
    );
    return row === undefined ? null : toDataKey(row);
  };
  return {
    async getDataKey(id) {
      const row = first(await query(`SELECT ${DATA_KEY_COLUMNS} FROM ${table} WHERE id = $1`, [id]));
      return row === undefined ? null : toDataKey(row);
    },
    liveDataKey: (owner) => live(query, owner),
    async insertDataKey(key) {
      // The partial unique index on live keys per owner decides a race between instances.
      const inserted = first(
        await query(
          `INSERT INTO ${table} (${DATA_KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT DO NOTHING RETURNING ${DATA_KEY_COLUMNS}`,
          dataKeyValues(key),
        ),
      );
      if (inserted !== undefined) return toDataKey(inserted);
      return (await live(query, key.owner)) ?? key;
    },
    async rewrapDataKey(id, fromKekId, kekId, wrapped) {
      const rows = await query(
        `UPDATE ${table} SET kek_id = $3, wrapped = $4 WHERE id = $1 AND kek_id = $2 AND wrapped IS NOT NULL RETURNING id`,
        [id, fromKekId, kekId, wrapped],
      );
      return rows.length > 0;
    },
    async forgetDataKeys(owner, at) {
      const rows = await query(
        `UPDATE ${table} SET kek_id = NULL, wrapped = NULL, forgotten_at = $2
         WHERE owner = $1 AND wrapped IS NOT NULL RETURNING id`,
        [owner, at],
      );
      return rows.map((row) => String(row.id));
    },
    async listLiveDataKeys({ afterId, limit }) {
      const rows = await query(
        `SELECT ${DATA_KEY_COLUMNS} FROM ${table} WHERE wrapped IS NOT NULL AND id > $1 ORDER BY id LIMIT $2`,
        [afterId ?? '', limit],
      );
      return rows.map(toDataKey);
    },
  };
}
