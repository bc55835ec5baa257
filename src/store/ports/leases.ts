import type { LeaseInfo } from '../../core/lease.ts';

export interface LeaseRequest {
  session: string;
  owner: string;
  untilMs: number;
  nowMs: number;
  /** Take the lease over from this owner even if it has not expired (the owner is known dead). */
  takeOverFrom?: string;
}

/**
 * Who must hold a session's lease for a write to go through, and the time to judge its term
 * by: the lease clock's (Liveness#now, as `nowMs` of acquireLease). The rule is
 * src/store/lease-rules.ts: the stored owner is `owner` and its term has not run out at `nowMs`.
 */
export interface LeaseFence {
  owner: string;
  nowMs: number;
}

export interface LeaseRenewal {
  session: string;
  owner: string;
  untilMs: number;
}

/** One run per session at a time: a lease with a term, taken and renewed by compare-and-set. */
export interface Leases {
  /** Takes the lease when it is free, lapsed at `nowMs`, already `owner`'s, or `takeOverFrom`'s. */
  acquireLease(request: LeaseRequest): Promise<boolean>;
  /**
   * Extends a lease only while `owner` still holds it; never takes a free or expired one, so
   * a renewal that lands after the run released the lease cannot take it back.
   */
  renewLease(renewal: LeaseRenewal): Promise<boolean>;
  releaseLease(session: string, owner: string): Promise<void>;
  getLease(session: string): Promise<LeaseInfo | null>;
}
