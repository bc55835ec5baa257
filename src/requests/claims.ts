import type { ApprovalRequest } from '../core/approval.ts';
import type { AuditEvent } from '../core/audit.ts';
import { activeClaim, claimStanding, DEFAULT_CLAIM_MS, MAX_CLAIM_MS, MIN_CLAIM_MS } from '../core/claims.ts';
import { type Decider, decisionRefusal, type RequestParties } from '../core/decision-rights.ts';
import { AlreadyDecidedError } from '../core/errors/already-decided-error.ts';
import { ClaimedError } from '../core/errors/claimed-error.ts';
import { ExpiredError } from '../core/errors/expired-error.ts';
import { ForbiddenError } from '../core/errors/forbidden-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { type ClockedStore, storeNow } from '../liveness/store-clock.ts';
import type { RequestTimers } from '../store/ports/request-timers.ts';

/** Where claims are kept, with the clock they are written and judged on (storeNow). */
export type ClaimStore = Pick<RequestTimers, 'changeClaim'> & ClockedStore;

/**
 * The moment a claim is taken or given back at: on the store's clock (storeNow; PostgreSQL:
 * the server's), so its term, the lapse of the claim it meets and its audit entry's time mean
 * the same on every host sharing the store. `local` (the caller's `now`) where no other host does.
 */
async function claimNow(store: ClockedStore, local: Date): Promise<string> {
  return new Date(await storeNow(store, () => local.getTime())).toISOString();
}

/** Why the request cannot be claimed or given back at all: decided, or past its expiry. */
function assertOpen(request: ApprovalRequest, now: string): void {
  if (request.status !== 'pending' && request.decision !== null)
    throw new AlreadyDecidedError(request.id, request.decision);
  if (request.status !== 'pending' || request.expiresAt <= now)
    throw new ExpiredError(
      `Request ${request.id} expired at ${request.expiresAt}; there is nothing to claim.`,
      {
        hint: 'Nothing was changed.',
      },
    );
}

/**
 * Takes `request` for `decider` for `forMs` (default 15 minutes, at most 8 hours, never past
 * its expiry), or renews their own claim. Exactly who may decide it may claim it (the
 * raiser and the customer may not: decision-rights.ts); someone else's live claim is CLAIMED.
 * One compare-and-set in the store, audited as `request.claimed` with it. The term counts
 * from now on the store's clock (claimNow); `options.now` is this host's time, used where no
 * other host shares the store.
 */
export async function claimRequest(
  store: ClaimStore,
  request: ApprovalRequest,
  parties: RequestParties,
  decider: Decider,
  options: { now: Date; forMs?: number },
): Promise<ApprovalRequest> {
  const forMs = options.forMs ?? DEFAULT_CLAIM_MS;
  if (!Number.isFinite(forMs) || forMs < MIN_CLAIM_MS || forMs > MAX_CLAIM_MS) {
    throw new InvalidInputError(
      `A claim lasts at least a second and at most ${MAX_CLAIM_MS / 3_600_000} hours.`,
      {
        hint: 'Give a shorter term (for example 15m or 1h); nothing was claimed.',
      },
    );
  }
  const now = await claimNow(store, options.now);
  assertOpen(request, now);
  const refusal = decisionRefusal(parties, decider, 'claim');
  if (refusal !== null) throw new ForbiddenError(refusal, { hint: 'Nothing was claimed.' });
  const held = activeClaim(request, now);
  if (held !== null && claimStanding(request, decider.name, now) === 'other')
    throw new ClaimedError(request.id, held);
  const untilMs = Math.min(Date.parse(now) + forMs, Date.parse(request.expiresAt));
  const claim = { by: decider.name, until: new Date(untilMs).toISOString() };
  const entry: AuditEvent = {
    kind: 'request.claimed',
    session: request.session,
    requestId: request.id,
    actor: decider.name,
    data: { until: claim.until, previous: request.claim?.by ?? null },
  };
  const result = await store.changeClaim(request.id, { by: decider.name, at: now, claim }, [entry]);
  if (result.won) return result.request;
  return explainLost(result.request, request, now);
}

/** Gives back `decider`'s claim. Nobody holding it is a no-op; someone else holding it is CLAIMED. */
export async function releaseRequest(
  store: ClaimStore,
  request: ApprovalRequest,
  decider: Decider,
  options: { now: Date },
): Promise<ApprovalRequest> {
  const now = await claimNow(store, options.now);
  assertOpen(request, now);
  if (request.claim === null) return request;
  if (request.claim.by !== decider.name) {
    const held = activeClaim(request, now);
    // Someone else's lapsed claim: nobody holds it, so there is nothing to give back.
    if (held === null) return request;
    throw new ClaimedError(request.id, held);
  }
  const entry: AuditEvent = {
    kind: 'request.released',
    session: request.session,
    requestId: request.id,
    actor: decider.name,
    data: { reason: 'released' },
  };
  const result = await store.changeClaim(request.id, { by: decider.name, at: now, claim: null }, [entry]);
  if (result.won) return result.request;
  // Lost: decided, or released meanwhile (then there is nothing left to do).
  if (result.request !== null && result.request.status === 'pending' && result.request.claim === null)
    return result.request;
  return explainLost(result.request, request, now);
}

/** A lost compare-and-set: the row changed between the read and the write, or is not in this store. */
function explainLost(row: ApprovalRequest | null, read: ApprovalRequest, now: string): never {
  if (row === null) {
    throw new InvalidInputError(
      `Request ${read.id} is kept by a checkpoint store that keeps no claims (a memory or file store of runs).`,
      { hint: 'Keep runs in the same SQLite or PostgreSQL store as the agents to claim their requests.' },
    );
  }
  assertOpen(row, now);
  const held = activeClaim(row, now);
  if (held !== null) throw new ClaimedError(row.id, held);
  throw new ClaimedError(row.id, row.claim ?? { by: 'someone', until: now });
}
