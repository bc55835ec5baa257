import type { JsonValue } from '../core/json.ts';
import type { RunStatus, StoredCheckpoint } from '../store/checkpoint-store.ts';
import type { ExpiredRequest, RunError, WorkflowRunState } from './run-state.ts';
import { statusOf } from './run-state.ts';

/** A request waiting for an answer, as the CLI prints it and a person answers it. */
export interface RequestView {
  id: string;
  port: string;
  data: JsonValue;
  createdAt: string;
  /** When it stops taking answers; null for requests of checkpoints older than expiry (never). */
  expiresAt: string | null;
}

/** Where a run stands after start, resume or respond: the `run` commands print this. */
export interface RunView {
  run: string;
  workflow: string;
  version: number;
  status: RunStatus;
  /** The checkpoint this view was read from (the run's latest after a write). */
  checkpoint: string;
  requests: RequestView[];
  outputs: JsonValue[];
  /** Requests reached along an edge that expired without an answer: their branches ended. */
  expired?: ExpiredRequest[];
  error?: RunError;
}

export function toRunView(checkpoint: StoredCheckpoint, state: WorkflowRunState): RunView {
  return {
    run: checkpoint.run,
    workflow: checkpoint.workflow,
    version: checkpoint.version,
    status: statusOf(state),
    checkpoint: checkpoint.id,
    requests: state.requests.map((request) => ({
      id: request.id,
      port: request.port,
      data: request.data,
      createdAt: request.createdAt,
      expiresAt: request.expiresAt,
    })),
    outputs: state.outputs,
    ...(state.expired.length > 0 ? { expired: state.expired } : {}),
    ...(state.error ? { error: state.error } : {}),
  };
}
