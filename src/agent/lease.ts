import { hostname } from 'node:os';
import { SessionBusyError } from '../core/errors/session-busy-error.ts';
import { secureRandomBytes } from '../core/random-bytes.ts';
import type { Store } from '../store/store.ts';

export interface LeaseOptions {
  leaseMs: number;
  waitMs: number;
}

const host = hostname();

export function newLeaseOwner(): string {
  return `${host}:${process.pid}:${secureRandomBytes(6).toString('hex')}`;
}

/** A lease held by a process on this host that no longer exists can be taken over at once. */
export function ownerIsDeadHere(owner: string): boolean {
  const [ownerHost, pidText] = owner.split(':');
  if (ownerHost !== host) return false;
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Renews the lease every third of its term while a run is in progress, so a long model call
 * keeps the session, while a dead process lets go of it within one term. Returns the stop.
 */
export function keepLease(store: Store, session: string, owner: string, leaseMs: number): () => void {
  const timer = setInterval(
    () => {
      const now = Date.now();
      // A failed renewal is not fatal here: the next commit is fenced and will say so. It only
      // extends: one that lands after the run released the lease must not take it back.
      store.renewLease({ session, owner, untilMs: now + leaseMs }).catch(() => undefined);
    },
    Math.max(50, Math.floor(leaseMs / 3)),
  );
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * One run per session at a time. Waits for a busy session (a decision arriving while the
 * model is still answering) up to `waitMs`, then gives up with SESSION_BUSY.
 */
export async function acquireSessionLease(
  store: Store,
  session: string,
  owner: string,
  options: LeaseOptions,
): Promise<void> {
  const deadline = Date.now() + options.waitMs;
  let delay = 5;
  for (;;) {
    const now = Date.now();
    if (await store.acquireLease({ session, owner, untilMs: now + options.leaseMs, nowMs: now })) return;
    const lease = await store.getLease(session);
    if (lease?.owner && ownerIsDeadHere(lease.owner)) {
      const takeOver = {
        session,
        owner,
        untilMs: now + options.leaseMs,
        nowMs: now,
        takeOverFrom: lease.owner,
      };
      if (await store.acquireLease(takeOver)) return;
    }
    if (Date.now() >= deadline) {
      throw new SessionBusyError(
        `Session ${session} is being run by another process (${lease?.owner ?? 'unknown'}).`,
        {
          hint: 'Try again in a moment; nothing was lost.',
        },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 100);
  }
}
