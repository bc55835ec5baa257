import type { DataKeys } from '../ports/data-keys.ts';
import { DATA_KEY_COLUMNS, dataKeyValues, toDataKey } from '../sql/data-key-rows.ts';
import type { Connection } from './connection.ts';

/** The `data_keys` table (migration 10): wrapped data keys of the encrypting codec. */
export function createSqliteDataKeys(connection: Pick<Connection, 'sql' | 'run' | 'write'>): DataKeys {
  const { sql, run, write } = connection;
  const live = (owner: string) => {
    const row = sql(
      `SELECT ${DATA_KEY_COLUMNS} FROM data_keys WHERE owner = ? AND wrapped IS NOT NULL ORDER BY created_at, id LIMIT 1`,
    ).get(owner);
    return row === undefined ? null : toDataKey(row);
  };
  return {
    async getDataKey(id) {
      return run(() => {
        const row = sql(`SELECT ${DATA_KEY_COLUMNS} FROM data_keys WHERE id = ?`).get(id);
        return row === undefined ? null : toDataKey(row);
      });
    },
    async liveDataKey(owner) {
      return run(() => live(owner));
    },
    async insertDataKey(key) {
      return write(() => {
        // The partial unique index on live keys per owner decides a race between processes.
        sql(
          `INSERT INTO data_keys (${DATA_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
        ).run(...dataKeyValues(key));
        return live(key.owner) ?? key;
      });
    },
    async rewrapDataKey(id, fromKekId, kekId, wrapped) {
      return write(
        () =>
          sql(
            'UPDATE data_keys SET kek_id = ?, wrapped = ? WHERE id = ? AND kek_id = ? AND wrapped IS NOT NULL',
          ).run(kekId, wrapped, id, fromKekId).changes > 0,
      );
    },
    async forgetDataKeys(owner, at) {
      return write(() =>
        sql(
          `UPDATE data_keys SET kek_id = NULL, wrapped = NULL, forgotten_at = ?
           WHERE owner = ? AND wrapped IS NOT NULL RETURNING id`,
        )
          .all(at, owner)
          .map((row) => String(row.id)),
      );
    },
    async listLiveDataKeys({ afterId, limit }) {
      return run(() =>
        sql(
          `SELECT ${DATA_KEY_COLUMNS} FROM data_keys WHERE wrapped IS NOT NULL AND id > ? ORDER BY id LIMIT ?`,
        )
          .all(afterId ?? '', limit)
          .map(toDataKey),
      );
    },
  };
}
