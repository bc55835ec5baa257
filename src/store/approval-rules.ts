import type { ApprovalRequest, Decision } from '../core/approval.ts';
import { bindingProblem, toolCallBinding } from '../core/check-binding.ts';
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
 * The comparison is the binding check's (check-binding.ts); a request written unbound is the
 * writer's mistake, so it is INVALID_INPUT here, before a byte is written.
 */
export function assertArgsBound(request: ApprovalRequest): void {
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
