import type { LeaseInfo } from './lease.ts';

/**
 * A session whose open batch is fully decided while no run continues it: what a process
 * leaves behind when it dies between committing a decision and continuing the session
 * (inline), or between the decision and enqueueing its continuation (queue mode).
 */
export interface StalledSession {
  id: string;
  agent: string;
  updatedAt: string;
  /** The lease as stored; with `includeHeld` the caller decides whether its holder is gone. */
  lease: LeaseInfo;
}
