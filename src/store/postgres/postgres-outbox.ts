import type { PayloadCodec } from '../codec.ts';
import type { Outbox } from '../ports/server/outbox.ts';
import { DELIVERY_COLUMNS } from '../sql/columns.ts';
import { byCreatedThenId, toDelivery } from '../sql/rows.ts';
import type { Tables } from '../sql/tables.ts';
import type { Query } from './connection.ts';
import { first } from './row-queries.ts';

/** The `deliveries` table: the server's webhook outbox in the schema (not part of Store). */
export function createPostgresOutbox(query: Query, t: Tables, codec: PayloadCodec): Outbox {
  return {
    async enqueueDelivery(delivery) {
      const rows = await query(
        `INSERT INTO ${t.deliveries} (id, kind, payload, created_at, next_at)
         VALUES ($1, $2, $3, $4, $5::bigint) ON CONFLICT (id) DO NOTHING RETURNING 1 AS ok`,
        [delivery.id, delivery.kind, codec.encode(delivery.payload), delivery.createdAt, delivery.nextAtMs],
      );
      return rows.length > 0;
    },

    async claimDeliveries(claim) {
      if (claim.limit < 1) return [];
      // SKIP LOCKED: a row another claimer is taking right now is passed over, not waited for.
      // A row it already took is re-checked against the WHERE after its commit, and its new
      // next_at no longer matches.
      // nowMs and next_at are on the server's clock, not the claimer's host's (the sender reads
      // it: storeNow), so a claim lapses at the same moment for every host.
      const rows = await query(
        `WITH due AS (
           SELECT id FROM ${t.deliveries}
           WHERE status = 'pending' AND next_at <= $1::bigint
           ORDER BY created_at, id LIMIT $2::integer
           FOR UPDATE SKIP LOCKED
         )
         UPDATE ${t.deliveries} AS d
         SET claimed_by = $3::text, next_at = $1::bigint + $4::bigint, attempts = d.attempts + 1
         FROM due WHERE d.id = due.id
         RETURNING ${DELIVERY_COLUMNS.split(', ')
           .map((column) => `d.${column}`)
           .join(', ')}`,
        [claim.nowMs, claim.limit, claim.owner, claim.leaseMs],
      );
      return rows.map((row) => toDelivery(codec, row)).sort(byCreatedThenId);
    },

    async finishDelivery(id, owner, outcome) {
      const rows =
        outcome.status === 'retry'
          ? await query(
              `UPDATE ${t.deliveries} SET next_at = $3::bigint, claimed_by = NULL, last_error = $4
               WHERE id = $1 AND status = 'pending' AND claimed_by = $2 RETURNING 1 AS ok`,
              [id, owner, outcome.nextAtMs, outcome.error],
            )
          : await query(
              `UPDATE ${t.deliveries}
               SET status = $3, claimed_by = NULL, finished_at = $4, last_error = COALESCE($5, last_error)
               WHERE id = $1 AND status = 'pending' AND claimed_by = $2 RETURNING 1 AS ok`,
              [id, owner, outcome.status, outcome.at, outcome.status === 'failed' ? outcome.error : null],
            );
      return rows.length > 0;
    },

    async getDelivery(id) {
      const row = first(await query(`SELECT ${DELIVERY_COLUMNS} FROM ${t.deliveries} WHERE id = $1`, [id]));
      return row === undefined ? null : toDelivery(codec, row);
    },
  };
}
