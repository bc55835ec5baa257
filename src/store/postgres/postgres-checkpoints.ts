import type { AuditEvent } from '../../core/audit.ts';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import {
  ANSWER_COLUMNS,
  CHECKPOINT_COLUMNS,
  toAnswer,
  toCheckpoint,
  toRunSummary,
} from '../checkpoint-row-readers.ts';
import { assertCheckpointHeader, assertStoreId, toCheckpointSummary } from '../checkpoint-rules.ts';
import type {
  CheckpointStore,
  RequestAnswer,
  SaveCheckpointResult,
  StoredCheckpoint,
} from '../checkpoint-store.ts';
import type { PayloadCodec } from '../codec.ts';
import type { AppState } from '../ports/app-state.ts';
import { text } from '../sql/rows.ts';
import type { Connection, Query } from './connection.ts';
import { first } from './row-queries.ts';
import { quoteIdentifier } from './schema-name.ts';

/** The AppState part (`state` table) is the store's own: postgres-app-state.ts. */
export type PostgresCheckpointMethods = Omit<
  CheckpointStore,
  'kind' | 'keepsAudit' | 'close' | keyof AppState
>;

/** Links audit events onto the chain inside the caller's transaction (row-writers.ts). */
type AppendAudit = (query: Query, events: readonly AuditEvent[] | undefined, at: string) => Promise<void>;

/**
 * The CheckpointStore half of the PostgreSQL store (tables from migration 003). A save is one
 * short transaction whose compare-and-set is a single conditional statement on the run's row
 * in `workflow_runs`: `INSERT … ON CONFLICT DO NOTHING` for a run's first checkpoint, else
 * `UPDATE … WHERE latest = $expected`. Under READ COMMITTED a racing writer waits on the row
 * and re-checks the condition against what the first committed, so exactly one of them wins.
 * Answers are one `INSERT … ON CONFLICT DO NOTHING` each; a save or an answer
 * that carries audit events is a transaction that appends them (last, as the audit head's
 * lock asks) only when the write happened.
 */
export function createPostgresCheckpoints(
  connection: Pick<Connection, 'query' | 'transaction'>,
  schema: string,
  codec: PayloadCodec,
  appendAudit: AppendAudit,
): PostgresCheckpointMethods {
  const q = (table: string) => `${quoteIdentifier(schema)}.${table}`;
  const runs = q('workflow_runs');
  const checkpoints = q('workflow_checkpoints');
  const answers = q('workflow_answers');
  const { query, transaction } = connection;

  async function checkpointById(on: Query, runId: string, id: string): Promise<StoredCheckpoint | null> {
    const row = first(
      await on(`SELECT ${CHECKPOINT_COLUMNS} FROM ${checkpoints} WHERE id = $1 AND run = $2`, [id, runId]),
    );
    return row === undefined ? null : toCheckpoint(codec, row);
  }

  async function latestOf(on: Query, runId: string): Promise<StoredCheckpoint | null> {
    const row = first(
      await on(
        `SELECT ${CHECKPOINT_COLUMNS} FROM ${checkpoints}
         WHERE id = (SELECT latest FROM ${runs} WHERE id = $1)`,
        [runId],
      ),
    );
    return row === undefined ? null : toCheckpoint(codec, row);
  }

  async function answerOf(on: Query, runId: string, requestId: string): Promise<RequestAnswer | null> {
    const row = first(
      await on(`SELECT ${ANSWER_COLUMNS} FROM ${answers} WHERE run = $1 AND request_id = $2`, [
        runId,
        requestId,
      ]),
    );
    return row === undefined ? null : toAnswer(codec, row);
  }

  return {
    async saveCheckpoint(checkpoint, expectedLatest, options = {}): Promise<SaveCheckpointResult> {
      assertCheckpointHeader(checkpoint, expectedLatest);
      return transaction(async (tq) => {
        const won =
          expectedLatest === null
            ? await tq(
                `INSERT INTO ${runs} (id, workflow, version, status, latest, latest_seq, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (id) DO NOTHING RETURNING id`,
                [
                  checkpoint.run,
                  checkpoint.workflow,
                  checkpoint.version,
                  checkpoint.status,
                  checkpoint.id,
                  checkpoint.seq,
                  checkpoint.createdAt,
                ],
              )
            : await tq(
                `UPDATE ${runs} SET workflow = $2, version = $3, status = $4, latest = $5, latest_seq = $6,
                   updated_at = $7
                 WHERE id = $1 AND latest = $8 AND latest_seq = $6::integer - 1 RETURNING id`,
                [
                  checkpoint.run,
                  checkpoint.workflow,
                  checkpoint.version,
                  checkpoint.status,
                  checkpoint.id,
                  checkpoint.seq,
                  checkpoint.createdAt,
                  expectedLatest,
                ],
              );
        if (won.length === 0) {
          // Read after the fact (a new statement sees what the winner committed).
          const head = first(
            await tq(`SELECT latest, latest_seq FROM ${runs} WHERE id = $1`, [checkpoint.run]),
          );
          const latest =
            head === undefined ? null : text(head, 'latest', `workflow_runs(id=${checkpoint.run})`);
          if (head !== undefined && latest === expectedLatest) {
            throw new InvalidInputError(
              `Checkpoint ${checkpoint.id} has seq ${checkpoint.seq}; the run's latest is ${String(head.latest_seq)}.`,
            );
          }
          return {
            saved: false,
            latest: latest === null ? null : await checkpointById(tq, checkpoint.run, latest),
          };
        }
        if ((await tq(`SELECT 1 AS taken FROM ${checkpoints} WHERE id = $1`, [checkpoint.id])).length > 0) {
          // Throwing rolls the run's row back too.
          throw new InvalidInputError(`Checkpoint ${checkpoint.id} already exists.`);
        }
        const row = first(
          await tq(
            `INSERT INTO ${checkpoints} (${CHECKPOINT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             RETURNING ${CHECKPOINT_COLUMNS}`,
            [
              checkpoint.id,
              checkpoint.run,
              checkpoint.seq,
              checkpoint.parent,
              checkpoint.superstep,
              checkpoint.createdAt,
              checkpoint.workflow,
              checkpoint.version,
              checkpoint.status,
              codec.encode(checkpoint.body),
            ],
          ),
        );
        if (row === undefined) throw new Error(`checkpoint ${checkpoint.id} was not inserted`);
        // Throwing here rolls the checkpoint back too: it never stands without its entries.
        await appendAudit(tq, options.audit, checkpoint.createdAt);
        // Returned as a later read would decode it, so a codec that changes values shows here too.
        return { saved: true, checkpoint: toCheckpoint(codec, row) };
      });
    },

    async getCheckpoint(runId, checkpointId) {
      assertStoreId('run', runId);
      return checkpointById(query, runId, checkpointId);
    },

    async latestCheckpoint(runId) {
      assertStoreId('run', runId);
      return latestOf(query, runId);
    },

    async checkpointHistory(runId) {
      assertStoreId('run', runId);
      const rows = await query(
        `SELECT ${CHECKPOINT_COLUMNS} FROM ${checkpoints} WHERE run = $1 ORDER BY seq`,
        [runId],
      );
      return rows.map((row) => toCheckpointSummary(toCheckpoint(codec, row)));
    },

    async listRuns() {
      const rows = await query(
        `SELECT id, workflow, version, status, latest, created_at, updated_at FROM ${runs} ORDER BY created_at, id`,
      );
      return rows.map(toRunSummary);
    },

    async answerRequest(answer, options = {}) {
      assertStoreId('run', answer.run);
      assertStoreId('request', answer.requestId);
      const audit = options.audit ?? [];
      const insert = async (on: Query) => {
        const row = first(
          await on(
            `INSERT INTO ${answers} (${ANSWER_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (run, request_id) DO NOTHING RETURNING ${ANSWER_COLUMNS}`,
            [
              answer.run,
              answer.requestId,
              codec.encode(answer.response),
              answer.by,
              answer.at,
              answer.expired === true,
            ],
          ),
        );
        // Only the winner's entries: throwing here rolls the answer back with them.
        if (row !== undefined) await appendAudit(on, audit, answer.at);
        return row;
      };
      // Without entries the compare-and-set is one statement: no BEGIN/COMMIT round trips.
      const inserted = audit.length === 0 ? await insert(query) : await transaction(insert);
      if (inserted !== undefined) return { won: true, answer: toAnswer(codec, inserted) };
      // The conflicting row is committed (ON CONFLICT waited for it), so this read finds it.
      const stored = await answerOf(query, answer.run, answer.requestId);
      if (stored === null) throw new Error(`answer ${answer.requestId} conflicted but cannot be read`);
      return { won: false, answer: stored };
    },

    async getAnswer(runId, requestId) {
      assertStoreId('run', runId);
      assertStoreId('request', requestId);
      return answerOf(query, runId, requestId);
    },
  };
}
