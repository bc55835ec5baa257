import type { ApprovalRequest, RequestClaim } from './approval.ts';

/** How long a claim lasts when the claimer names no term. */
export const DEFAULT_CLAIM_MS = 15 * 60_000;
/** The shortest claim: a term under a second would be stored already lapsed (and audited as taken). */
export const MIN_CLAIM_MS = 1000;
/** The longest claim: a claim is for working on a request now, not for parking it. */
export const MAX_CLAIM_MS = 8 * 3_600_000;

/**
 * The claim that holds at `now` (ISO-8601): a claim lapses by itself at its `until`, so no
 * process has to clear it. Null when nobody holds the request.
 */
export function activeClaim(request: Pick<ApprovalRequest, 'claim'>, now: string): RequestClaim | null {
  const { claim } = request;
  return claim !== null && claim.until > now ? claim : null;
}

/**
 * What a claim attempt by `by` at `now` meets: free (nobody, or a lapsed claim), theirs
 * already (a renewal), or someone else's. The store's compare-and-set applies the same rule
 * in its WHERE clause; this is how callers explain a refusal.
 */
export function claimStanding(
  request: Pick<ApprovalRequest, 'claim'>,
  by: string,
  now: string,
): 'free' | 'theirs' | 'other' {
  const held = activeClaim(request, now);
  if (held === null) return 'free';
  // Exactly the name that claimed: the store's compare-and-set compares it bytewise too.
  return held.by === by ? 'theirs' : 'other';
}

/**
 * What a decision's audit entry notes about a claim: who held the request and until when,
 * when someone other than the decider held it at `now` (deciding never needs a claim, but the
 * trail shows that it was taken from under the holder). Nothing when the decider held it or
 * nobody did. It reads the row the decision already read, so it costs no store call.
 */
export function claimOverridden(
  request: Pick<ApprovalRequest, 'claim'>,
  decider: string,
  now: string,
): { claimedBy: string; claimedUntil: string } | Record<string, never> {
  const held = activeClaim(request, now);
  return held === null || claimStanding(request, decider, now) !== 'other'
    ? {}
    : { claimedBy: held.by, claimedUntil: held.until };
}
