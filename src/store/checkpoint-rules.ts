import type { ApprovalRequest } from '../core/approval.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { userIdPattern } from '../core/ids.ts';
import { assertWritable } from './approval-rules.ts';
import type { RunSummary, StoredCheckpoint } from './checkpoint-store.ts';

// Shared by every checkpoint backend so a refusal reads the same whichever store is configured.

/**
 * Run and request ids become directory and file names in the file store, so every backend
 * refuses the same ids: the caller-id alphabet, and never a `..` that could climb out.
 */
export function assertStoreId(kind: 'run' | 'request' | 'checkpoint', id: string): void {
  if (typeof id !== 'string' || !userIdPattern.test(id) || id.includes('..')) {
    throw new InvalidInputError(
      `${kind[0]!.toUpperCase()}${kind.slice(1)} id "${String(id)}" is not valid.`,
      {
        hint: 'Use 1-128 letters, digits and . _ : @ - characters, starting with a letter or digit, without "..".',
      },
    );
  }
}

/** The header rules a save must meet before any backend looks at what is stored. */
export function assertCheckpointHeader(checkpoint: StoredCheckpoint, expectedLatest: string | null): void {
  assertStoreId('run', checkpoint.run);
  assertStoreId('checkpoint', checkpoint.id);
  const bad = (detail: string) =>
    new InvalidInputError(`Checkpoint ${checkpoint.id} of run ${checkpoint.run} is malformed: ${detail}.`);
  if (!Number.isSafeInteger(checkpoint.seq) || checkpoint.seq < 0) throw bad(`seq ${checkpoint.seq}`);
  if ((expectedLatest === null) !== (checkpoint.seq === 0)) {
    throw bad(`seq ${checkpoint.seq} with expected latest ${expectedLatest ?? 'none'}`);
  }
  if ((checkpoint.parent === null) !== (checkpoint.seq === 0)) {
    throw bad(`seq ${checkpoint.seq} with parent ${checkpoint.parent ?? 'none'}`);
  }
  if (!Number.isSafeInteger(checkpoint.superstep) || checkpoint.superstep < 0) {
    throw bad(`superstep ${checkpoint.superstep}`);
  }
}

/**
 * The requests a checkpoint raises are its run's port requests, pending and bound to their
 * payload: anything else is the caller's mistake, refused before anything is written.
 */
export function assertRaisedRequests(
  checkpoint: StoredCheckpoint,
  requests: readonly ApprovalRequest[] | undefined,
): void {
  for (const request of requests ?? []) {
    assertStoreId('request', request.id);
    if (request.kind !== 'port' || request.run !== checkpoint.run || request.status !== 'pending') {
      throw new InvalidInputError(
        `Request ${request.id} cannot be raised by checkpoint ${checkpoint.id}: it must be a pending port request of run ${checkpoint.run}.`,
      );
    }
    assertWritable(request);
  }
}

export function toCheckpointSummary(checkpoint: StoredCheckpoint) {
  return {
    checkpointId: checkpoint.id,
    parentCheckpointId: checkpoint.parent,
    superstep: checkpoint.superstep,
    createdAt: checkpoint.createdAt,
  };
}

/**
 * The customer a checkpoint names: its header's, else the origin its body records (a
 * checkpoint written before the header carried one). The one thing a store reads inside a
 * body, only for such checkpoints; the SQL migrations read the same path.
 */
export function checkpointCustomer(checkpoint: StoredCheckpoint): string | null {
  if (checkpoint.customer !== undefined && checkpoint.customer !== null) return checkpoint.customer;
  const { body } = checkpoint;
  const field = (value: unknown, name: string): unknown =>
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)[name]
      : undefined;
  const customer = field(field(field(body, 'state'), 'origin'), 'customer');
  return typeof customer === 'string' ? customer : null;
}

/**
 * A run as listed: created with its first checkpoint, where and how it stands at its latest,
 * for the customer it was started for.
 */
export function toRunSummary(
  run: string,
  createdAt: string,
  latest: StoredCheckpoint,
  customer: string | null,
): RunSummary {
  return {
    run,
    workflow: latest.workflow,
    version: latest.version,
    status: latest.status,
    checkpoint: latest.id,
    customer,
    createdAt,
    updatedAt: latest.createdAt,
  };
}

/** Oldest run first, ties by run id: the order every backend lists runs in. */
export function sortRuns(list: RunSummary[]): RunSummary[] {
  return list.sort((a, b) =>
    a.createdAt === b.createdAt ? (a.run < b.run ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1,
  );
}
