import type { ApprovalRequest } from '../../core/approval.ts';
import type { AuditEvent } from '../../core/audit.ts';
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
import { type RunPageDialect, runPageIndex, runPageSql } from '../sql/run-page-sql.ts';
import type { Connection } from './connection.ts';

/**
 * The CheckpointStore half of the SQLite store. `workflow_runs` keeps each run's latest
 * checkpoint, so the compare-and-set on it is one row read under BEGIN IMMEDIATE, and a
 * checkpoint write is one INSERT plus one UPDATE whatever the run's length. The port
 * requests a checkpoint raises go into `approvals` (`insertApproval`) and its audit events
 * onto the agents' chain (`appendAudit`), both inside the write, so neither stands without
 * the checkpoint. Answering one is the store's `decide`, as for a tool call.
 */
/**
 * Pages of runs name their index (INDEXED BY): given an equality on status SQLite's planner
 * would otherwise search by it and sort every run of that status before the LIMIT.
 */
export const SQLITE_RUN_PAGE_DIALECT: RunPageDialect = {
  runs: 'workflow_runs',
  param: (index) => `?${index}`,
  indexHint: (plan) => `INDEXED BY ${runPageIndex(plan)}`,
};

export function createSqliteCheckpoints(
  connection: Pick<Connection, 'sql' | 'run' | 'write' | 'snapshotRead'>,
  codec: PayloadCodec,
  appendAudit: (events: readonly AuditEvent[] | undefined, at: string) => void,
  insertApproval: (request: ApprovalRequest) => void,
): SqlCheckpointMethods {
  const { sql, run, write, snapshotRead } = connection;

  function checkpointById(runId: string, id: string): StoredCheckpoint | null {
    const row = sql(`SELECT ${CHECKPOINT_COLUMNS} FROM workflow_checkpoints WHERE id = ? AND run = ?`).get(
      id,
      runId,
    );
    return row === undefined ? null : toCheckpoint(codec, row);
  }

  return {
    async saveCheckpoint(checkpoint, expectedLatest, options = {}): Promise<SaveCheckpointResult> {
      assertCheckpointHeader(checkpoint, expectedLatest);
      assertRaisedRequests(checkpoint, options.requests);
      return write(() => {
        const head = sql('SELECT latest, latest_seq FROM workflow_runs WHERE id = ?').get(checkpoint.run);
        const latest =
          head === undefined ? null : text(head, 'latest', `workflow_runs(id=${checkpoint.run})`);
        if (latest !== expectedLatest) {
          return { saved: false, latest: latest === null ? null : checkpointById(checkpoint.run, latest) };
        }
        if (head !== undefined && checkpoint.seq !== Number(head.latest_seq) + 1) {
          throw new InvalidInputError(
            `Checkpoint ${checkpoint.id} has seq ${checkpoint.seq}; the run's latest is ${String(head.latest_seq)}.`,
          );
        }
        if (sql('SELECT 1 FROM workflow_checkpoints WHERE id = ?').get(checkpoint.id) !== undefined) {
          throw new InvalidInputError(`Checkpoint ${checkpoint.id} already exists.`);
        }
        if (head === undefined) {
          sql(
            `INSERT INTO workflow_runs (id, workflow, version, status, latest, latest_seq, created_at, updated_at, customer)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(
            checkpoint.run,
            checkpoint.workflow,
            checkpoint.version,
            checkpoint.status,
            checkpoint.id,
            checkpoint.seq,
            checkpoint.createdAt,
            checkpoint.createdAt,
            checkpoint.customer ?? null,
          );
        } else {
          // The customer is the run's from its start: a later checkpoint only fills it in
          // for a run that has none recorded (one written before the column).
          sql(
            `UPDATE workflow_runs SET workflow = ?, version = ?, status = ?, latest = ?, latest_seq = ?, updated_at = ?,
               customer = COALESCE(customer, ?)
             WHERE id = ?`,
          ).run(
            checkpoint.workflow,
            checkpoint.version,
            checkpoint.status,
            checkpoint.id,
            checkpoint.seq,
            checkpoint.createdAt,
            checkpoint.customer ?? null,
            checkpoint.run,
          );
        }
        sql(
          `INSERT INTO workflow_checkpoints (${CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(
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
        );
        // Throwing here rolls the checkpoint back too: it never stands without its requests
        // and entries.
        for (const request of options.requests ?? []) insertApproval(request);
        appendAudit(options.audit, checkpoint.createdAt);
        // Returned as a later read would decode it, so a codec that changes values shows here too.
        const saved = checkpointById(checkpoint.run, checkpoint.id);
        if (saved === null)
          throw new Error(`checkpoint ${checkpoint.id} vanished inside its own transaction`);
        return { saved: true, checkpoint: saved };
      });
    },

    async adoptRequests(requests) {
      await write(() => {
        for (const request of requests) {
          if (sql('SELECT 1 FROM approvals WHERE id = ?').get(request.id) === undefined)
            insertApproval(request);
        }
      });
    },

    async getCheckpoint(runId, checkpointId) {
      assertStoreId('run', runId);
      return run(() => checkpointById(runId, checkpointId));
    },

    async latestCheckpoint(runId) {
      assertStoreId('run', runId);
      return run(() => {
        const row = sql(
          `SELECT ${CHECKPOINT_COLUMNS} FROM workflow_checkpoints
           WHERE id = (SELECT latest FROM workflow_runs WHERE id = ?)`,
        ).get(runId);
        return row === undefined ? null : toCheckpoint(codec, row);
      });
    },

    async checkpointHistory(runId) {
      assertStoreId('run', runId);
      return run(() =>
        sql(`SELECT ${CHECKPOINT_COLUMNS} FROM workflow_checkpoints WHERE run = ? ORDER BY seq`)
          .all(runId)
          .map((row) => toCheckpointSummary(toCheckpoint(codec, row))),
      );
    },

    async listRuns() {
      return run(() =>
        sql(`SELECT ${RUN_COLUMNS} FROM workflow_runs ORDER BY created_at, id`).all().map(toRunSummary),
      );
    },

    async pageRuns(query) {
      const plan = planRunPage(query);
      const statements = runPageSql(SQLITE_RUN_PAGE_DIALECT, plan);
      return snapshotRead(() => {
        const rows = sql(statements.page.text)
          .all(...statements.page.values)
          .map(toRunSummary);
        const total =
          statements.count === null
            ? undefined
            : Number((sql(statements.count.text).get(...statements.count.values) as { n: number }).n);
        return runPageOf(rows, plan, total);
      });
    },
  };
}
