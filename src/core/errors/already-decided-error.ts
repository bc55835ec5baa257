import type { Decision } from '../approval.ts';
import { CountersignError } from './countersign-error.ts';

/** Carries the decision that won, so the loser can tell the person who decided first. */
export class AlreadyDecidedError extends CountersignError {
  override readonly name = 'AlreadyDecidedError';
  readonly decision: Decision;
  constructor(requestId: string, decision: Decision, message?: string) {
    super(
      'ALREADY_DECIDED',
      message ??
        `Request ${requestId} was already ${decision.verdict} by ${decision.by} at ${decision.at}` +
          (decision.reason ? ` (reason: ${decision.reason}).` : '.'),
      { hint: 'Nothing was changed; the first decision stands.' },
    );
    this.decision = decision;
  }
}
