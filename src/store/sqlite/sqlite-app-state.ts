import type { JsonValue } from '../../core/json.ts';
import type { PayloadCodec } from '../codec.ts';
import type { AppState } from '../ports/app-state.ts';
import { toStateValue } from '../sql/rows.ts';
import { stateValue } from '../state-value.ts';
import type { Connection } from './connection.ts';

/** The `state` table: the one AppState of the SQLite store, for tools and workflow executors alike. */
export function createSqliteAppState(
  connection: Pick<Connection, 'sql' | 'run' | 'write'>,
  codec: PayloadCodec,
): AppState {
  const { sql, run, write } = connection;
  return {
    async getState(namespace, key) {
      return run(() => {
        const row = sql('SELECT value FROM state WHERE namespace = ? AND key = ?').get(namespace, key);
        return row === undefined ? undefined : toStateValue(codec, row, namespace, key);
      });
    },

    async setState(namespace, key, value: JsonValue) {
      const stored = stateValue(namespace, key, value);
      await write(() => {
        sql(
          `INSERT INTO state (namespace, key, value) VALUES (?, ?, ?)
           ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value`,
        ).run(namespace, key, codec.encode(stored));
      });
    },

    async claimState(namespace, key, value) {
      const offered = stateValue(namespace, key, value);
      return write(() => {
        const result = sql(
          'INSERT INTO state (namespace, key, value) VALUES (?, ?, ?) ON CONFLICT (namespace, key) DO NOTHING',
        ).run(namespace, key, codec.encode(offered));
        const row = sql('SELECT value FROM state WHERE namespace = ? AND key = ?').get(namespace, key);
        if (row === undefined)
          throw new Error(`state ${namespace}/${key} vanished inside its own transaction`);
        const stored = toStateValue(codec, row, namespace, key);
        return result.changes > 0 ? { won: true, value: stored } : { won: false, value: stored };
      });
    },
  };
}
