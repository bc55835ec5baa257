import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import {
  assertCheckpointHeader,
  assertRaisedRequests,
  assertStoreId,
  sortRuns,
  toCheckpointSummary,
  toRunSummary,
} from '../checkpoint-rules.ts';
import type {
  CheckpointStore,
  RunSummary,
  SaveCheckpointResult,
  StoredCheckpoint,
} from '../checkpoint-store.ts';
import { createRunErasure } from '../run-erasure.ts';
import { createMemoryAppState } from './memory-app-state.ts';

import { createMemoryRequestBook } from './memory-request-book.ts';

const copy = <T>(value: T): T => structuredClone(value);

interface RunEntry {
  checkpoints: StoredCheckpoint[];
  createdAt: string;
}

/**
 * A process-local CheckpointStore for unit tests and `COUNTERSIGN_STORE=memory:`. Each method
 * checks before it changes anything and never awaits in between, so it is as all-or-nothing
 * as a transaction.
 */
export function createMemoryCheckpointStore(): CheckpointStore {
  const runs = new Map<string, RunEntry>();
  // The runs' port requests: rows like the agents' tool calls, answered with `decide`.
  const requests = createMemoryRequestBook();

  const store: CheckpointStore = {
    kind: 'memory',
    // No audit trail here: `options.audit` of a write is ignored (see CheckpointStore.keepsAudit).
    keepsAudit: false,
    ...createMemoryAppState(),
    ...createRunErasure({
      requests,
      listRuns: () => store.listRuns(),
      async removeRun(run) {
        const count = runs.get(run)?.checkpoints.length ?? 0;
        runs.delete(run);
        return count;
      },
      async removeRequests(ids) {
        return requests.removeRows(ids);
      },
    }),

    async saveCheckpoint(checkpoint, expectedLatest, options = {}): Promise<SaveCheckpointResult> {
      assertCheckpointHeader(checkpoint, expectedLatest);
      const raised = options.requests ?? [];
      assertRaisedRequests(checkpoint, raised);
      const entry = runs.get(checkpoint.run);
      const latest = entry?.checkpoints.at(-1) ?? null;
      if ((latest?.id ?? null) !== expectedLatest) return { saved: false, latest: copy(latest) };
      if (latest !== null && checkpoint.seq !== latest.seq + 1) {
        throw new InvalidInputError(
          `Checkpoint ${checkpoint.id} has seq ${checkpoint.seq}; the run's latest is ${latest.seq}.`,
        );
      }
      for (const other of runs.values()) {
        if (other.checkpoints.some((stored) => stored.id === checkpoint.id)) {
          throw new InvalidInputError(`Checkpoint ${checkpoint.id} already exists.`);
        }
      }
      requests.assertInsertable(raised);
      const stored = copy(checkpoint);
      requests.insert(raised);
      if (entry === undefined)
        runs.set(checkpoint.run, { checkpoints: [stored], createdAt: stored.createdAt });
      else entry.checkpoints.push(stored);
      return { saved: true, checkpoint: copy(stored) };
    },

    async getCheckpoint(run, checkpointId) {
      assertStoreId('run', run);
      return copy(runs.get(run)?.checkpoints.find((stored) => stored.id === checkpointId) ?? null);
    },

    async latestCheckpoint(run) {
      assertStoreId('run', run);
      return copy(runs.get(run)?.checkpoints.at(-1) ?? null);
    },

    async checkpointHistory(run) {
      assertStoreId('run', run);
      return (runs.get(run)?.checkpoints ?? []).map(toCheckpointSummary);
    },

    async listRuns(): Promise<RunSummary[]> {
      const list: RunSummary[] = [];
      for (const [run, entry] of runs) {
        const latest = entry.checkpoints.at(-1);
        if (latest === undefined) continue;
        list.push(toRunSummary(run, entry.createdAt, latest));
      }
      return sortRuns(list);
    },

    async adoptRequests(rows) {
      requests.adopt(rows);
    },
    getApproval: requests.getApproval,
    listApprovals: requests.listApprovals,
    pageRequests: requests.pageRequests,
    decisionStats: requests.decisionStats,
    listDue: requests.listDue,
    decide: requests.decide,
    recordApproval: requests.recordApproval,

    async close() {},
  };
  return store;
}
