import type { ApprovalRequest } from '../../core/approval.ts';
import {
  approvalUpdateApplies,
  decisionApplies,
  dueRequests,
  matchesFilter,
  withApprovalUpdate,
} from '../approval-rules.ts';
import { assertStatsQuery, statsOfRows } from '../decision-stats.ts';
import type { RequestBook } from '../ports/request-book.ts';
import { pageInMemory } from '../request-page.ts';
import { approvalExists } from '../store-errors.ts';

const copy = <T>(value: T): T => structuredClone(value);

const byCreated = (a: ApprovalRequest, b: ApprovalRequest) =>
  a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1;

/**
 * Requests held in process memory: the memory checkpoint store's port requests. `insert`
 * checks every row before it adds any and never awaits, so a caller's write stays
 * all-or-nothing. It keeps no audit trail (events given to `decide` are ignored).
 */
export interface MemoryRequestBook extends RequestBook {
  /** Throws (adding none) when one of the ids is taken. */
  insert(requests: readonly ApprovalRequest[]): void;
  /** Inserts the rows whose ids are free; leaves the rest. */
  adopt(requests: readonly ApprovalRequest[]): void;
  /** Would `insert` refuse these? Checked before the caller changes anything else. */
  assertInsertable(requests: readonly ApprovalRequest[]): void;
  /** Deletes these rows (erasure, retention); returns how many there were. */
  removeRows(ids: readonly string[]): number;
}

export function createMemoryRequestBook(): MemoryRequestBook {
  const rows = new Map<string, ApprovalRequest>();

  function assertInsertable(requests: readonly ApprovalRequest[]): void {
    const seen = new Set<string>();
    for (const request of requests) {
      if (rows.has(request.id) || seen.has(request.id)) throw approvalExists(request.id);
      seen.add(request.id);
    }
  }

  return {
    assertInsertable,
    removeRows(ids) {
      let removed = 0;
      for (const id of ids) if (rows.delete(id)) removed += 1;
      return removed;
    },
    adopt(requests) {
      for (const request of requests) if (!rows.has(request.id)) rows.set(request.id, copy(request));
    },
    insert(requests) {
      assertInsertable(requests);
      for (const request of requests) rows.set(request.id, copy(request));
    },
    async getApproval(id) {
      return copy(rows.get(id) ?? null);
    },
    async listApprovals(filter = {}) {
      return [...rows.values()]
        .filter((request) => matchesFilter(request, filter))
        .sort(byCreated)
        .map(copy);
    },
    async decisionStats(query) {
      assertStatsQuery(query);
      return statsOfRows(rows.values(), query);
    },
    async pageRequests(query) {
      const page = pageInMemory(rows.values(), query);
      return { ...page, items: page.items.map(copy) };
    },
    async listDue(query) {
      return dueRequests(rows.values(), query).map(copy);
    },
    async decide(id, decision) {
      const request = rows.get(id);
      if (request === undefined || !decisionApplies(request, decision)) {
        return { won: false, request: copy(request ?? null) };
      }
      const decided: ApprovalRequest = { ...request, status: decision.verdict, decision: copy(decision) };
      rows.set(id, decided);
      return { won: true, request: copy(decided), leased: false };
    },
    async recordApproval(id, update) {
      const request = rows.get(id);
      if (request === undefined || !approvalUpdateApplies(request, update)) {
        return { won: false, request: copy(request ?? null) };
      }
      const updated = withApprovalUpdate(request, update);
      rows.set(id, updated);
      return { won: true, request: copy(updated) };
    },
  };
}
