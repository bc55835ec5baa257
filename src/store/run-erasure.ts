import type { ApprovalRequest } from '../core/approval.ts';
import type { RunStatus } from './checkpoint-store.ts';
import type { ErasureCounts, PrincipalErasure, PurgeCounts, Retention } from './ports/erasure.ts';
import type { RequestBook } from './ports/request-book.ts';

/**
 * What a store of runs only (memory, files) gives erasure and retention to work on: its own
 * indexes of runs by customer and of ended runs by age, so neither lists every run.
 */
export interface HeldRuns {
  requests: Pick<RequestBook, 'listApprovals'>;
  /** The runs started for `customer` (their clear `customer`), from the store's index by customer. */
  runsOf(customer: string): Promise<string[]>;
  /**
   * Ended runs (completed, failed, expired) last written before `before`, oldest first, then
   * by run id; at most `limit` (Infinity: all of them, for a dry run's count).
   */
  endedBefore(before: string, limit: number): Promise<string[]>;
  /** The status of the run's latest checkpoint; null when there is no such run. */
  statusOf(run: string): Promise<RunStatus | null>;
  /** Deletes the run with its checkpoints; returns how many checkpoints it had. */
  removeRun(run: string): Promise<number>;
  /** Deletes the request rows (and their decisions); returns how many there were. */
  removeRequests(ids: readonly string[]): Promise<number>;
}

export const ENDED_RUN_STATUSES: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'expired']);
const byCreated = (a: ApprovalRequest, b: ApprovalRequest) =>
  a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1;

/**
 * Erasure and retention for a checkpoint store that keeps runs and their port requests only.
 * A run is the customer's when it was started for them (the store's index by customer) or
 * when one of its requests names them. These stores have no index of requests: erasure and
 * purge read their request book, which is what `pending` reads too.
 */
export function createRunErasure(held: HeldRuns): PrincipalErasure & Retention {
  async function removeRuns(runs: readonly string[]) {
    let checkpoints = 0;
    let requests = 0;
    let removed = 0;
    for (const run of runs) {
      const ofRun = (await held.requests.listApprovals({ run })).map((request) => request.id);
      requests += await held.removeRequests(ofRun);
      const count = await held.removeRun(run);
      checkpoints += count;
      if (count > 0) removed += 1;
    }
    return { runs: removed, checkpoints, requests };
  }

  /** The customer's requests, and the runs erasing them removes (runsToErase reads the same). */
  async function theirs(principal: string) {
    const requests = (await held.requests.listApprovals()).filter(
      (request) => request.customer === principal,
    );
    const runs = [
      ...new Set([
        ...(await held.runsOf(principal)),
        ...requests.flatMap((request) => (request.run === null ? [] : [request.run])),
      ]),
    ];
    return { requests, runs };
  }

  return {
    async listPendingOf(principal) {
      return (await held.requests.listApprovals({ status: 'pending' }))
        .filter((request) => request.customer === principal)
        .sort(byCreated);
    },

    async runsToErase(principal) {
      return (await theirs(principal)).runs;
    },

    async erasePrincipal({ principal }): Promise<ErasureCounts> {
      // No audit trail here (keepsAudit: false): the caller's trail records the erasure.
      const { requests: found, runs } = await theirs(principal);
      const ofRuns = await removeRuns(runs);
      const loose = found.filter((request) => request.run === null).map((request) => request.id);
      const requests = ofRuns.requests + (await held.removeRequests(loose));
      return {
        sessions: 0,
        messages: 0,
        requests,
        executions: 0,
        runs: ofRuns.runs,
        checkpoints: ofRuns.checkpoints,
        auditEntries: 0,
        deliveries: 0,
      };
    },

    async purgeBatch(batch): Promise<PurgeCounts> {
      const { before, dryRun } = batch;
      const limit = dryRun ? Number.POSITIVE_INFINITY : Math.max(1, Math.trunc(batch.limit));
      const ended = before.runs === undefined ? [] : await held.endedBefore(before.runs, limit);
      const going = new Set(ended);
      // A decided request stays while its run still waits; one of a run going now goes with it.
      const statuses = new Map<string, RunStatus | null>();
      const runWaits = async (run: string): Promise<boolean> => {
        if (!statuses.has(run)) statuses.set(run, await held.statusOf(run));
        const status = statuses.get(run) ?? null;
        return status !== null && !ENDED_RUN_STATUSES.has(status);
      };
      const decided: string[] = [];
      if (before.requests !== undefined) {
        const candidates = (await held.requests.listApprovals())
          .filter((request) => request.status !== 'pending' && request.createdAt < before.requests!)
          .sort(byCreated);
        for (const request of candidates) {
          if (decided.length >= limit) break;
          if (request.run !== null && (going.has(request.run) || (await runWaits(request.run)))) continue;
          decided.push(request.id);
        }
      }
      if (dryRun) return { sessions: 0, runs: ended.length, requests: decided.length, auditEntries: 0 };
      const ofRuns = await removeRuns(ended);
      const requests = await held.removeRequests(decided);
      return { sessions: 0, runs: ofRuns.runs, requests, auditEntries: 0 };
    },
  };
}
