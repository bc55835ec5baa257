import { CHECKPOINT_COLUMNS, toCheckpoint } from '../checkpoint-row-readers.ts';
import type { StoredCheckpoint } from '../checkpoint-store.ts';
import type { PayloadCodec } from '../codec.ts';
import { type LegacyAnswer, legacyAnswersByRun, legacyRunRows } from '../legacy-requests.ts';
import { approvalValues, decidedValues } from '../row-values.ts';
import {
  APPROVAL_COLUMNS,
  APPROVAL_PLACEHOLDERS,
  DECIDED_COLUMNS,
  DECIDED_PLACEHOLDERS,
} from '../sql/columns.ts';
import type { Connection } from './connection.ts';
import { migrationLockKey, quoteIdentifier } from './schema-name.ts';

/**
 * After migration 009: the pending port requests of checkpoints written before requests were
 * rows become rows (insert-if-absent), each with the answer `workflow_answers` recorded for
 * it, and the table goes — one transaction under the migration lock, so of several processes
 * opening the schema one adopts and the rest find no table. A checkpoint that does not
 * decode is skipped (its run reports it when resumed). A request whose time cannot be stored
 * refuses it all with CORRUPT_DATA naming the row (legacy-requests.ts): the transaction rolls
 * back and the table stays, for the next open.
 */
export async function adoptLegacyRequests(
  connection: Pick<Connection, 'query' | 'transaction'>,
  schema: string,
  codec: PayloadCodec,
): Promise<void> {
  const q = (table: string) => `${quoteIdentifier(schema)}.${table}`;
  const answersTable = q('workflow_answers');
  // A plain read of the catalog, so after the lock it sees a drop another process committed.
  const present = async (query: Connection['query']) =>
    (
      await query(
        `SELECT 1 AS present FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND c.relname = 'workflow_answers'`,
        [schema],
      )
    ).length > 0;
  if (!(await present(connection.query))) return;
  await connection.transaction(async (tq) => {
    await tq('SELECT pg_advisory_xact_lock($1::bigint)', [migrationLockKey(schema)]);
    if (!(await present(tq))) return;
    const answers = legacyAnswersByRun(codec, await tq(`SELECT * FROM ${answersTable}`));
    const latest = await tq(
      `SELECT ${CHECKPOINT_COLUMNS} FROM ${q('workflow_checkpoints')}
       WHERE id IN (SELECT latest FROM ${q('workflow_runs')})`,
    );
    for (const row of latest) {
      let newestFirst: StoredCheckpoint[];
      let runAnswers: Map<string, LegacyAnswer>;
      try {
        const checkpoint = toCheckpoint(codec, row);
        runAnswers = answers.get(checkpoint.run) ?? new Map();
        newestFirst =
          runAnswers.size === 0
            ? [checkpoint]
            : (
                await tq(
                  `SELECT ${CHECKPOINT_COLUMNS} FROM ${q('workflow_checkpoints')} WHERE run = $1 ORDER BY seq DESC`,
                  [checkpoint.run],
                )
              ).map((r) => toCheckpoint(codec, r));
      } catch {
        continue;
      }
      // Outside the try: a time that cannot be stored refuses the whole adoption (rolled back).
      for (const request of legacyRunRows(newestFirst, runAnswers)) {
        await tq(
          `INSERT INTO ${q('approvals')} (${APPROVAL_COLUMNS}, ${DECIDED_COLUMNS})
           VALUES (${APPROVAL_PLACEHOLDERS}, ${DECIDED_PLACEHOLDERS})
           ON CONFLICT (id) DO NOTHING`,
          [...approvalValues(codec, request), ...decidedValues(request)],
        );
      }
    }
    await tq(`DROP TABLE ${answersTable}`);
  });
}
