import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import {
  assertCheckpointHeader,
  assertRaisedRequests,
  assertStoreId,
  checkpointCustomer,
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
import { createRunErasure, ENDED_RUN_STATUSES } from '../run-erasure.ts';
import { pageRunsInMemory, planRunPage } from '../run-page.ts';
import { createMemoryAppState } from './memory-app-state.ts';

import { createMemoryRequestBook } from './memory-request-book.ts';

const copy = <T>(value: T): T => structuredClone(value);

interface RunEntry {
  checkpoints: StoredCheckpoint[];
  createdAt: string;
  customer: string | null;
}

/**
 * A process-local CheckpointStore for unit tests and `COUNTERSIGN_STORE=memory:`. Each method
 * checks before it changes anything and never awaits in between, so it is as all-or-nothing
 * as a transaction.
 */
export function createMemoryCheckpointStore(): CheckpointStore {
  const runs = new Map<string, RunEntry>();
  // What erasure and retention look runs up by, as the SQL stores' indexes: runs by customer,
  // and the runs whose latest checkpoint ended them.
  const byCustomer = new Map<string, Set<string>>();
  const ended = new Set<string>();

  const summaryOf = (run: string, entry: RunEntry): RunSummary | null => {
    const latest = entry.checkpoints.at(-1);
    return latest === undefined ? null : toRunSummary(run, entry.createdAt, latest, entry.customer);
  };
  const forget = (run: string) => {
    const entry = runs.get(run);
    if (entry?.customer != null) byCustomer.get(entry.customer)?.delete(run);
    ended.delete(run);
    runs.delete(run);
  };
  // The runs' port requests: rows like the agents' tool calls, answered with `decide`.
  const requests = createMemoryRequestBook();

  const store: CheckpointStore = {
    kind: 'memory',
    // No audit trail here: `options.audit` of a write is ignored (see CheckpointStore.keepsAudit).
    keepsAudit: false,
    ...createMemoryAppState(),
    ...createRunErasure({
      requests,
      async runsOf(customer) {
        return [...(byCustomer.get(customer) ?? [])];
      },
      async endedBefore(before, limit) {
        const found: RunSummary[] = [];
        for (const run of ended) {
          const entry = runs.get(run);
          const summary = entry === undefined ? null : summaryOf(run, entry);
          if (summary !== null && summary.updatedAt < before) found.push(summary);
        }
        return found
          .sort((a, b) =>
            a.updatedAt === b.updatedAt ? (a.run < b.run ? -1 : 1) : a.updatedAt < b.updatedAt ? -1 : 1,
          )
          .slice(0, limit)
          .map((summary) => summary.run);
      },
      async statusOf(run) {
        return runs.get(run)?.checkpoints.at(-1)?.status ?? null;
      },
      async removeRun(run) {
        const count = runs.get(run)?.checkpoints.length ?? 0;
        forget(run);
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
      const saved: RunEntry = entry ?? { checkpoints: [], createdAt: stored.createdAt, customer: null };
      if (entry === undefined) runs.set(checkpoint.run, saved);
      saved.checkpoints.push(stored);
      // Recorded with the run's first checkpoint; a later one only fills in what is missing.
      const customer = checkpointCustomer(stored);
      if (saved.customer === null && customer !== null) {
        saved.customer = customer;
        const theirs = byCustomer.get(customer) ?? new Set<string>();
        theirs.add(checkpoint.run);
        byCustomer.set(customer, theirs);
      }
      if (ENDED_RUN_STATUSES.has(stored.status)) ended.add(checkpoint.run);
      else ended.delete(checkpoint.run);
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
        const summary = summaryOf(run, entry);
        if (summary !== null) list.push(summary);
      }
      return sortRuns(list);
    },

    async pageRuns(query) {
      const plan = planRunPage(query);
      // A customer's runs from their index; otherwise every run held (it is memory).
      const names =
        plan.exact.customer === undefined ? runs.keys() : (byCustomer.get(plan.exact.customer) ?? []);
      const list: RunSummary[] = [];
      for (const run of names) {
        const entry = runs.get(run);
        const summary = entry === undefined ? null : summaryOf(run, entry);
        if (summary !== null) list.push(summary);
      }
      return copy(pageRunsInMemory(list, plan));
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
