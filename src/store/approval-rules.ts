import type { ApprovalRequest, Decision } from '../core/approval.ts';
import { canonicalJson } from '../core/canonical-json.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';

/**
 * A person's verdict is only valid before the deadline; the system's own answers
 * (expiry, moved-on, rules) are what closes a request after it.
 */
export function decisionNeedsUnexpired(decision: Decision): boolean {
  return decision.kind === 'person' && (decision.verdict === 'approved' || decision.verdict === 'rejected');
}

/**
 * Stores keep one copy of the arguments (`argsJson`) and rebuild `args` from it, so the two
 * must agree on the way in; a mismatch would mean what runs differs from what was shown.
 */
export function assertArgsBound(request: ApprovalRequest): void {
  if (canonicalJson(request.args) !== request.argsJson) {
    throw new InvalidInputError(
      `Approval request ${request.id} has argsJson that is not the canonical JSON of args.`,
      {
        hint: 'Build argsJson and argsHash with bindArgs(args).',
      },
    );
  }
}
