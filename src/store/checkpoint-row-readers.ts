import type { JsonValue } from '../core/json.ts';
import { RUN_STATUSES, type RunSummary, type StoredCheckpoint } from './checkpoint-store.ts';
import type { PayloadCodec } from './codec.ts';
import { int, oneOf, payload, type Row, text, textOrNull } from './row-readers.ts';

/** The workflow tables' rows, read the same way by both SQL backends. */
export const CHECKPOINT_COLUMNS =
  'id, run, seq, parent, superstep, created_at, workflow, version, status, body';
const runStatuses = RUN_STATUSES;

/** What a run is listed with, in the order toRunSummary reads. */
export const RUN_COLUMNS = 'id, workflow, version, status, latest, customer, created_at, updated_at';

export function toCheckpoint(codec: PayloadCodec, row: Row): StoredCheckpoint {
  const where = `workflow_checkpoints(id=${String(row.id)})`;
  return {
    id: text(row, 'id', where),
    run: text(row, 'run', where),
    seq: int(row, 'seq', where),
    parent: textOrNull(row, 'parent', where),
    superstep: int(row, 'superstep', where),
    createdAt: text(row, 'created_at', where),
    workflow: text(row, 'workflow', where),
    version: int(row, 'version', where),
    status: oneOf(row, 'status', where, runStatuses),
    body: payload(codec, row, 'body', where) as JsonValue,
  };
}

export function toRunSummary(row: Row): RunSummary {
  const where = `workflow_runs(id=${String(row.id)})`;
  return {
    run: text(row, 'id', where),
    workflow: text(row, 'workflow', where),
    version: int(row, 'version', where),
    status: oneOf(row, 'status', where, runStatuses),
    checkpoint: text(row, 'latest', where),
    customer: textOrNull(row, 'customer', where),
    createdAt: text(row, 'created_at', where),
    updatedAt: text(row, 'updated_at', where),
  };
}
