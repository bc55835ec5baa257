import type { JsonValue } from '../../core/json.ts';
import { storedText } from '../../core/storable-text.ts';
import type { PayloadCodec } from '../codec.ts';
import type { AppState } from '../ports/app-state.ts';
import { toStateValue } from '../sql/rows.ts';
import { stateValue } from '../state-value.ts';
import { coalescedReads } from './coalesced-reads.ts';
import type { Query } from './connection.ts';
import { jsonParameter } from './json-parameter.ts';
import { first } from './row-queries.ts';

interface StateKey {
  namespace: string;
  key: string;
}

// Unambiguous for any two strings: the namespace's length comes first. Each part as stored
// (storedText) before they are joined: a namespace ending in a lone high surrogate and a key
// starting with a lone low one would otherwise join into a well-formed pair, which the
// coalesced read's storedText of the whole leaves as it is, while the row holds U+FFFD twice.
const stateKey = ({ namespace, key }: StateKey) =>
  `${namespace.length}:${storedText(namespace)}${storedText(key)}`;

/**
 * The `state` table: the one AppState of the PostgreSQL store, for tools and workflow executors
 * alike. `write` runs setState's one statement; the store passes its group commit, so a tool's
 * write shares a transaction with other requests' writes in flight.
 */
export function createPostgresAppState(
  query: Query,
  state: string,
  codec: PayloadCodec,
  write: (statement: (query: Query) => Promise<unknown>) => Promise<unknown> = (statement) =>
    statement(query),
): AppState {
  // Every key read in the same turn, in one statement (coalesced-reads.ts): a tool's policy
  // and its run read its state on each decision, concurrent decisions in the same turn.
  const read = coalescedReads(
    async (keys: readonly StateKey[]) =>
      new Map(
        (
          await query(
            // One index probe per key: OFFSET 0 keeps the subquery a lateral one, so even
            // the generic plan (json-parameter.ts) cannot turn it into a scan of the table.
            `SELECT s.namespace, s.key, s.value FROM json_to_recordset($1::json) AS k(namespace text, key text)
             CROSS JOIN LATERAL (
               SELECT namespace, key, value FROM ${state} WHERE namespace = k.namespace AND key = k.key OFFSET 0
             ) s`,
            [jsonParameter(keys.map(({ namespace, key }) => ({ namespace, key })))],
          )
        ).map((row) => [stateKey(row as unknown as StateKey), row]),
      ),
    stateKey,
  );
  return {
    async getState(namespace, key) {
      const row = await read({ namespace, key });
      return row === undefined ? undefined : toStateValue(codec, row, namespace, key);
    },

    async setState(namespace, key, value: JsonValue) {
      const encoded = codec.encode(stateValue(namespace, key, value));
      await write((q) =>
        q(
          `INSERT INTO ${state} (namespace, key, value) VALUES ($1, $2, $3)
           ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value`,
          [namespace, key, encoded],
        ),
      );
    },

    async claimState(namespace, key, value) {
      const inserted = first(
        await query(
          `INSERT INTO ${state} (namespace, key, value) VALUES ($1, $2, $3)
           ON CONFLICT (namespace, key) DO NOTHING RETURNING value`,
          [namespace, key, codec.encode(stateValue(namespace, key, value))],
        ),
      );
      if (inserted !== undefined) return { won: true, value: toStateValue(codec, inserted, namespace, key) };
      const row = first(
        await query(`SELECT value FROM ${state} WHERE namespace = $1 AND key = $2`, [namespace, key]),
      );
      if (row === undefined) throw new Error(`state ${namespace}/${key} conflicted but cannot be read`);
      return { won: false, value: toStateValue(codec, row, namespace, key) };
    },
  };
}
