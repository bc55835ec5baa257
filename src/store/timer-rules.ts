import type { ApprovalRequest } from '../core/approval.ts';
import { nextNudgeAt } from '../core/nudges.ts';
import type { ClaimChange, NudgeAdvance, NudgeDueQuery } from './ports/request-timers.ts';

/*
 * The RequestTimers compare-and-sets for the stores that hold rows in memory (memory store,
 * memory request book), written as the SQL backends' WHERE clauses are, so every backend
 * agrees on who wins.
 */

/** `listNudgesDue` over rows in memory: pending, next nudge at or before `query.at`, soonest first. */
export function nudgesDue(rows: Iterable<ApprovalRequest>, query: NudgeDueQuery): ApprovalRequest[] {
  const due: Array<{ at: string; request: ApprovalRequest }> = [];
  for (const request of rows) {
    if (request.status !== 'pending') continue;
    if (query.kind !== undefined && request.kind !== query.kind) continue;
    const at = nextNudgeAt(request.nudges);
    if (at !== null && at <= query.at) due.push({ at, request });
  }
  due.sort((a, b) => (a.at === b.at ? (a.request.id < b.request.id ? -1 : 1) : a.at < b.at ? -1 : 1));
  return due.slice(0, Math.max(0, query.limit)).map((entry) => entry.request);
}

/** The nudge CAS: still pending, and the row's next nudge time is still the one the sweep read. */
export function nudgeApplies(request: ApprovalRequest, advance: NudgeAdvance): boolean {
  const expected = nextNudgeAt(advance.from);
  return request.status === 'pending' && expected !== null && nextNudgeAt(request.nudges) === expected;
}

/** The row after a won nudge. */
export function nudged(request: ApprovalRequest, advance: NudgeAdvance): ApprovalRequest {
  return { ...request, nudges: advance.to, escalatedTo: advance.escalatedTo ?? request.escalatedTo };
}

/**
 * The claim CAS. Taking: pending, unexpired at `at`, and free at `at` (no claim, a lapsed one,
 * or the claimer's own, which this renews). Giving back: the claimer holds it (even lapsed).
 */
export function claimApplies(request: ApprovalRequest, change: ClaimChange): boolean {
  if (request.status !== 'pending') return false;
  if (change.claim === null) return request.claim !== null && request.claim.by === change.by;
  return (
    request.expiresAt > change.at &&
    (request.claim === null || request.claim.until <= change.at || request.claim.by === change.by)
  );
}
