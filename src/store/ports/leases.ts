import type { LeaseInfo } from '../../core/lease.ts';

export interface LeaseRequest {
  session: string;
  owner: string;
  untilMs: number;
  nowMs: number;
  /** Take the lease over from this owner even if it has not expired (the owner is known dead). */
  takeOverFrom?: string;
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
