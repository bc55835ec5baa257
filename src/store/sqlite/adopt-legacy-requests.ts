import type { DatabaseSync } from 'node:sqlite';
import { CHECKPOINT_COLUMNS, toCheckpoint } from '../checkpoint-row-readers.ts';
import type { StoredCheckpoint } from '../checkpoint-store.ts';
import type { PayloadCodec } from '../codec.ts';
import { type LegacyAnswer, legacyAnswersByRun, legacyRunRows } from '../legacy-requests.ts';
import { approvalValues, decidedValues } from '../row-values.ts';
import { APPROVAL_COLUMNS, DECIDED_COLUMNS } from '../sql/columns.ts';

/**
 * After migration 9: the pending port requests of checkpoints written before requests were
 * rows become rows (insert-if-absent), each with the answer `workflow_answers` recorded for
 * it, and the table goes — in one transaction, so a crash leaves it to the next open. Runs
 * once per file: afterwards there is no `workflow_answers` to find. A checkpoint that does
 * not decode is skipped (its run reports it when resumed); its answers go with the table. A
 * request whose time cannot be stored refuses it all with CORRUPT_DATA naming the row
 * (legacy-requests.ts): nothing is written and the table stays, for the next open.
 */
export function adoptLegacyRequests(db: DatabaseSync, codec: PayloadCodec): void {
  const exists = () =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'workflow_answers'").get() !==
    undefined;
  if (!exists()) return;
  db.exec('BEGIN IMMEDIATE');
  try {
    if (exists()) {
      const answers = legacyAnswersByRun(codec, db.prepare('SELECT * FROM workflow_answers').all());
      const insert = db.prepare(
        `INSERT INTO approvals (${APPROVAL_COLUMNS}, ${DECIDED_COLUMNS}) VALUES (${`${APPROVAL_COLUMNS}, ${DECIDED_COLUMNS}`
          .split(',')
          .map(() => '?')
          .join(', ')}) ON CONFLICT (id) DO NOTHING`,
      );
      const latest = db.prepare(
        `SELECT ${CHECKPOINT_COLUMNS} FROM workflow_checkpoints WHERE id IN (SELECT latest FROM workflow_runs)`,
      );
      const history = db.prepare(
        `SELECT ${CHECKPOINT_COLUMNS} FROM workflow_checkpoints WHERE run = ? ORDER BY seq DESC`,
      );
      for (const row of latest.all()) {
        let newestFirst: StoredCheckpoint[];
        let runAnswers: Map<string, LegacyAnswer>;
        try {
          const checkpoint = toCheckpoint(codec, row);
          runAnswers = answers.get(checkpoint.run) ?? new Map();
          newestFirst =
            runAnswers.size === 0
              ? [checkpoint]
              : history.all(checkpoint.run).map((r) => toCheckpoint(codec, r));
        } catch {
          continue;
        }
        // Outside the try: a time that cannot be stored refuses the whole adoption (rolled back).
        for (const request of legacyRunRows(newestFirst, runAnswers))
          insert.run(...approvalValues(codec, request), ...decidedValues(request));
      }
      db.exec('DROP TABLE workflow_answers');
    }
    db.exec('COMMIT');
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
}
