import type { RequestClaim } from '../approval.ts';
import { CountersignError } from './countersign-error.ts';

/** Someone else holds the request: it carries their claim, so the caller can say who and until when. */
export class ClaimedError extends CountersignError {
  override readonly name = 'ClaimedError';
  readonly claim: RequestClaim;
  constructor(requestId: string, claim: RequestClaim) {
    super('CLAIMED', `Request ${requestId} is claimed by ${claim.by} until ${claim.until}.`, {
      hint: 'Nothing was changed. Their claim lapses by itself at that time; deciding never needs a claim, so you may still decide it.',
    });
    this.claim = claim;
  }
}
