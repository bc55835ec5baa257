import type { ApprovalRequest, Decision } from '../core/approval.ts';
import { bindingProblem, toolCallBinding } from '../core/check-binding.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { assertStorableInstant } from '../core/instant.ts';
import { SEALED_TEXT_PREFIX } from './codec.ts';
import type { ApprovalUpdate, DueQuery } from './ports/request-book.ts';
import type { ApprovalFilter } from './store.ts';

/**
 * A person's verdict is only valid before the deadline; the system's own answers
 * (expiry, moved-on, rules) are what closes a request after it.
 */
export function decisionNeedsUnexpired(decision: Decision): boolean {
  return (
    decision.kind === 'person' &&
    (decision.verdict === 'approved' || decision.verdict === 'rejected' || decision.verdict === 'answered')
  );
}

/**
 * Checks a request on its way in, INVALID_INPUT before a byte is written. Its expiry must be
 * a time the stores order correctly as text (core/instant.ts). Stores keep one
 * copy of the arguments (`argsJson`) and rebuild `args` from it, so the two must agree; a
 * mismatch would mean what runs differs from what was shown. The comparison is the binding
 * check's (check-binding.ts); a request written unbound is the writer's mistake.
 *
 * An effect preview must not start with the sealed text prefix: without keys it was stored
 * as written and read back as ciphertext (CONFIG_ERROR on every list holding it), and the
 * SQL text search leaves such a preview out (sql/request-page-sql.ts: searchableEffect).
 */
export function assertWritable(request: ApprovalRequest): void {
  assertStorableInstant(request.expiresAt, `Approval request ${request.id}: expiresAt`);
  if (request.effect.startsWith(SEALED_TEXT_PREFIX)) {
    throw new InvalidInputError(
      `Approval request ${request.id} has an effect preview starting with "${SEALED_TEXT_PREFIX}", the form of an encrypted one.`,
      { hint: `Word the preview so it does not begin with "${SEALED_TEXT_PREFIX}".` },
    );
  }
  const problem = bindingProblem(toolCallBinding(request));
  if (problem !== null) {
    throw new InvalidInputError(
      `Approval request ${request.id} is not bound to its arguments: ${problem} (argsJson must be the canonical JSON of args, argsHash its SHA-256).`,
      {
        hint: 'Build argsJson and argsHash with bindArgs(args).',
      },
    );
  }
}

/** `listApprovals`' filter for the stores that hold rows in memory (the memory and file stores). */
export function matchesFilter(request: ApprovalRequest, filter: ApprovalFilter): boolean {
  return (
    (filter.status === undefined || request.status === filter.status) &&
    (filter.session === undefined || request.session === filter.session) &&
    (filter.tool === undefined || request.tool === filter.tool) &&
    (filter.kind === undefined || request.kind === filter.kind) &&
    (filter.run === undefined || request.run === filter.run)
  );
}

/** `listDue` over rows in memory: pending, due at `query.at`, soonest first, at most `limit`. */
export function dueRequests(rows: Iterable<ApprovalRequest>, query: DueQuery): ApprovalRequest[] {
  const due: ApprovalRequest[] = [];
  for (const request of rows) {
    if (request.status !== 'pending' || request.expiresAt > query.at) continue;
    if (query.kind !== undefined && request.kind !== query.kind) continue;
    due.push(request);
  }
  due.sort((a, b) =>
    a.expiresAt === b.expiresAt ? (a.id < b.id ? -1 : 1) : a.expiresAt < b.expiresAt ? -1 : 1,
  );
  return due.slice(0, Math.max(0, query.limit));
}

/** Whether the compare-and-set lets `decision` decide `request` (see RequestBook.decide). */
export function decisionApplies(request: ApprovalRequest, decision: Decision): boolean {
  return (
    request.status === 'pending' && !(decisionNeedsUnexpired(decision) && !(request.expiresAt > decision.at))
  );
}

/** Whether recordApproval's compare-and-set lets `update` change `request` (pending, same revision, unexpired). */
export function approvalUpdateApplies(request: ApprovalRequest, update: ApprovalUpdate): boolean {
  return (
    request.status === 'pending' && request.revision === update.revision && request.expiresAt > update.at
  );
}

/** The row after a won recordApproval: the update's fields, the revision bumped. */
export function withApprovalUpdate(request: ApprovalRequest, update: ApprovalUpdate): ApprovalRequest {
  return {
    ...request,
    approvals: structuredClone(update.approvals),
    edit: structuredClone(update.edit),
    requiredRole: update.requiredRole,
    approvalsNeeded: update.approvalsNeeded,
    revision: request.revision + 1,
  };
}
