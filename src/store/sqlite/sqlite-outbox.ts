import type { PayloadCodec } from '../codec.ts';
import type { Outbox } from '../ports/server/outbox.ts';
import { DELIVERY_COLUMNS } from '../sql/columns.ts';
import { byCreatedThenId, toDelivery } from '../sql/rows.ts';
import type { Connection } from './connection.ts';

/** The `deliveries` table: the server's webhook outbox on the SQLite file (not part of Store). */
export function createSqliteOutbox(
  connection: Pick<Connection, 'sql' | 'run' | 'write'>,
  codec: PayloadCodec,
): Outbox {
  const { sql, run, write } = connection;
  return {
    async enqueueDelivery(delivery) {
      return write(
        () =>
          sql(
            `INSERT INTO deliveries (id, kind, payload, created_at, next_at) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (id) DO NOTHING`,
          ).run(
            delivery.id,
            delivery.kind,
            codec.encode(delivery.payload),
            delivery.createdAt,
            delivery.nextAtMs,
          ).changes > 0,
      );
    },

    async claimDeliveries(claim) {
      if (claim.limit < 1) return [];
      // Pollers call this every second: when nothing is due, a read answers without taking
      // the write lock. The claim itself re-checks inside its transaction.
      const due = run(() =>
        sql(`SELECT 1 AS due FROM deliveries WHERE status = 'pending' AND next_at <= ? LIMIT 1`).get(
          claim.nowMs,
        ),
      );
      if (due === undefined) return [];
      // One write transaction (BEGIN IMMEDIATE): no other connection can claim in between.
      // Decoded inside the transaction: a codec that stops to fetch a key rolls the claim back.
      const claimed = await write(() =>
        sql(
          `UPDATE deliveries SET claimed_by = ?, next_at = ?, attempts = attempts + 1
           WHERE id IN (
             SELECT id FROM deliveries WHERE status = 'pending' AND next_at <= ?
             ORDER BY created_at, id LIMIT ?
           ) RETURNING ${DELIVERY_COLUMNS}`,
        )
          .all(claim.owner, claim.nowMs + claim.leaseMs, claim.nowMs, claim.limit)
          .map((row) => toDelivery(codec, row)),
      );
      return claimed.sort(byCreatedThenId);
    },

    async finishDelivery(id, owner, outcome) {
      return write(() => {
        const result =
          outcome.status === 'retry'
            ? sql(
                `UPDATE deliveries SET next_at = ?, claimed_by = NULL, last_error = ?
                 WHERE id = ? AND status = 'pending' AND claimed_by = ?`,
              ).run(outcome.nextAtMs, outcome.error, id, owner)
            : sql(
                `UPDATE deliveries SET status = ?, claimed_by = NULL, finished_at = ?,
                   last_error = COALESCE(?, last_error)
                 WHERE id = ? AND status = 'pending' AND claimed_by = ?`,
              ).run(
                outcome.status,
                outcome.at,
                outcome.status === 'failed' ? outcome.error : null,
                id,
                owner,
              );
        return result.changes > 0;
      });
    },

    async getDelivery(id) {
      return run(() => {
        const row = sql(`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE id = ?`).get(id);
        return row === undefined ? null : toDelivery(codec, row);
      });
    },
  };
}
