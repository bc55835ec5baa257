import type { ApprovalRequest } from '../../core/approval.ts';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import { runScope } from '../../crypto/scopes.ts';
import { CHECKPOINT_COLUMNS, RUN_COLUMNS, toCheckpoint, toRunSummary } from '../checkpoint-row-readers.ts';
import {
  assertCheckpointHeader,
  assertRaisedRequests,
  assertStoreId,
  toCheckpointSummary,
} from '../checkpoint-rules.ts';
import type { SaveCheckpointResult, StoredCheckpoint } from '../checkpoint-store.ts';
import type { PayloadCodec } from '../codec.ts';
import { planRunPage, runPageOf } from '../run-page.ts';
import type { SqlCheckpointMethods } from '../sql/checkpoint-methods.ts';
import { text } from '../sql/rows.ts';
import { type RunPageDialect, runPageSql } from '../sql/run-page-sql.ts';
import type { Connection, Query } from './connection.ts';
import type { GroupCommit } from './group-commit.ts';
import { first } from './row-queries.ts';
import { quoteIdentifier } from './schema-name.ts';

/**
 * PostgreSQL's dialect for pages of runs: the planner picks the index from the keyset order
 * by itself (postgres-checkpoints.test.ts checks the plans).
 */
export function postgresRunPageDialect(runs: string): RunPageDialect {
  return { runs, param: (index) => `$${index}` };
}

/**
 * The CheckpointStore half of the PostgreSQL store (tables from migration 003). A save is one
 * short transaction whose compare-and-set is a single conditional statement on the run's row
 * in `workflow_runs`: `INSERT … ON CONFLICT DO NOTHING` for a run's first checkpoint, else
 * `UPDATE … WHERE latest = $expected`. Under READ COMMITTED a racing writer waits on the row
 * and re-checks the condition against what the first committed, so exactly one of them wins.
 * Claims are one `INSERT … ON CONFLICT DO NOTHING` each. The port requests a save raises are
 * inserted into `approvals` in its transaction, and its audit events linked last (as the
 * audit head's lock asks), only when the write happened: a save is a write of the store's
 * group commit (group-commit.ts), so saves of several runs at once share a transaction and
 * one link. Answering one is the store's `decide`, as for a tool call.
 */
export function createPostgresCheckpoints(
  connection: Pick<Connection, 'query' | 'transaction'>,
  schema: string,
  codec: PayloadCodec,
  group: Pick<GroupCommit, 'run'>,
  insertApproval: (query: Query, request: ApprovalRequest) => Promise<void>,
): SqlCheckpointMethods {
  const q = (table: string) => `${quoteIdentifier(schema)}.${table}`;
  const runs = q('workflow_runs');
  const checkpoints = q('workflow_checkpoints');
  const { query, transaction } = connection;
  const pageDialect = postgresRunPageDialect(runs);

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

  return {
    async saveCheckpoint(checkpoint, expectedLatest, options = {}): Promise<SaveCheckpointResult> {
      assertCheckpointHeader(checkpoint, expectedLatest);
      assertRaisedRequests(checkpoint, options.requests);
      return group.run(async (tq, link) => {
        const won =
          expectedLatest === null
            ? await tq(
                `INSERT INTO ${runs} (id, workflow, version, status, latest, latest_seq, created_at, updated_at, customer)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING id`,
                [
                  checkpoint.run,
                  checkpoint.workflow,
                  checkpoint.version,
                  checkpoint.status,
                  checkpoint.id,
                  checkpoint.seq,
                  checkpoint.createdAt,
                  checkpoint.customer ?? null,
                ],
              )
            : await tq(
                // The customer is the run's from its start: a later checkpoint only fills it
                // in for a run that has none recorded (one written before the column).
                `UPDATE ${runs} SET workflow = $2, version = $3, status = $4, latest = $5, latest_seq = $6,
                   updated_at = $7, customer = COALESCE(customer, $9)
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
                  checkpoint.customer ?? null,
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
              codec.encode(checkpoint.body, runScope(checkpoint.run)),
            ],
          ),
        );
        if (row === undefined) throw new Error(`checkpoint ${checkpoint.id} was not inserted`);
        // Throwing here rolls the checkpoint back too: it never stands without its requests
        // and entries.
        for (const request of options.requests ?? []) await insertApproval(tq, request);
        link(options.audit, checkpoint.createdAt);
        // Returned as a later read would decode it, so a codec that changes values shows here too.
        return { saved: true, checkpoint: toCheckpoint(codec, row) };
      }, 'many');
    },

    async adoptRequests(requests) {
      if (requests.length === 0) return;
      await transaction(async (tq) => {
        for (const request of requests) {
          const taken = await tq(`SELECT 1 AS taken FROM ${q('approvals')} WHERE id = $1`, [request.id]);
          if (taken.length === 0) await insertApproval(tq, request);
        }
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
      const rows = await query(`SELECT ${RUN_COLUMNS} FROM ${runs} ORDER BY created_at, id`);
      return rows.map(toRunSummary);
    },

    async pageRuns(pageQuery) {
      const plan = planRunPage(pageQuery);
      const statements = runPageSql(pageDialect, plan);
      const [rows, counted] = await Promise.all([
        query(statements.page.text, statements.page.values),
        statements.count === null ? null : query(statements.count.text, statements.count.values),
      ]);
      const total = counted === null ? undefined : Number((counted[0] as { n: unknown } | undefined)?.n ?? 0);
      return runPageOf(rows.map(toRunSummary), plan, total);
    },
  };
}
