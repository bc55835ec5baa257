import type { ApprovalRequest } from '../core/approval.ts';
import type { RunSummary } from './checkpoint-store.ts';
import type { ErasureCounts, PrincipalErasure, PurgeCounts, Retention } from './ports/erasure.ts';
import type { RequestBook } from './ports/request-book.ts';

/** What a store of runs only (memory, files) gives erasure and retention to work on. */
export interface HeldRuns {
  requests: Pick<RequestBook, 'listApprovals'>;
  listRuns(): Promise<RunSummary[]>;
  /** Deletes the run with its checkpoints; returns how many checkpoints it had. */
  removeRun(run: string): Promise<number>;
  /** Deletes the request rows (and their decisions); returns how many there were. */
  removeRequests(ids: readonly string[]): Promise<number>;
}

const ENDED: ReadonlySet<string> = new Set(['completed', 'failed', 'expired']);
const byCreated = (a: ApprovalRequest, b: ApprovalRequest) =>
  a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1;

/**
 * Erasure and retention for a checkpoint store that keeps runs and their port requests only.
 * These stores have no index to ask by customer or age: erasure reads their request book and
 * purge their run list, which is what `runs` and `pending` read too. A run is the
 * customer's when one of its requests names them.
 */
export function createRunErasure(held: HeldRuns): PrincipalErasure & Retention {
  async function removeRuns(runs: readonly string[]) {
    let checkpoints = 0;
    let requests = 0;
    for (const run of runs) {
      const ofRun = (await held.requests.listApprovals({ run })).map((request) => request.id);
      requests += await held.removeRequests(ofRun);
      checkpoints += await held.removeRun(run);
    }
    return { checkpoints, requests };
  }

  return {
    async listPendingOf(principal) {
      return (await held.requests.listApprovals({ status: 'pending' }))
        .filter((request) => request.customer === principal)
        .sort(byCreated);
    },

    async erasePrincipal({ principal }): Promise<ErasureCounts> {
      // No audit trail here (keepsAudit: false): the caller's trail records the erasure.
      const theirs = (await held.requests.listApprovals()).filter(
        (request) => request.customer === principal,
      );
      const runs = [...new Set(theirs.flatMap((request) => (request.run === null ? [] : [request.run])))];
      const ofRuns = await removeRuns(runs);
      const loose = theirs.filter((request) => request.run === null).map((request) => request.id);
      const requests = ofRuns.requests + (await held.removeRequests(loose));
      return {
        sessions: 0,
        messages: 0,
        requests,
        executions: 0,
        runs: runs.length,
        checkpoints: ofRuns.checkpoints,
        auditEntries: 0,
        deliveries: 0,
      };
    },

    async purgeBatch(batch): Promise<PurgeCounts> {
      const { before, dryRun } = batch;
      const limit = dryRun ? Number.POSITIVE_INFINITY : Math.max(1, Math.trunc(batch.limit));
      const all = await held.listRuns();
      const ended =
        before.runs === undefined
          ? []
          : all
              .filter((run) => ENDED.has(run.status) && run.updatedAt < before.runs!)
              .slice(0, limit)
              .map((run) => run.run);
      const waiting = new Set(all.filter((run) => !ENDED.has(run.status)).map((run) => run.run));
      const decided =
        before.requests === undefined
          ? []
          : (await held.requests.listApprovals())
              .filter(
                (request) =>
                  request.status !== 'pending' &&
                  request.createdAt < before.requests! &&
                  !(request.run !== null && waiting.has(request.run)) &&
                  !(request.run !== null && ended.includes(request.run)),
              )
              .sort(byCreated)
              .slice(0, limit)
              .map((request) => request.id);
      if (dryRun) return { sessions: 0, runs: ended.length, requests: decided.length, auditEntries: 0 };
      await removeRuns(ended);
      const requests = await held.removeRequests(decided);
      return { sessions: 0, runs: ended.length, requests, auditEntries: 0 };
    },
  };
}
