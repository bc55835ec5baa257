import { SessionBusyError } from '../core/errors/session-busy-error.ts';
import { secureRandomBytes } from '../core/random-bytes.ts';
import { deadOwners } from '../liveness/dead-owners.ts';
import { formatOwner } from '../liveness/lease-owner.ts';
import type { Liveness } from '../liveness/liveness.ts';
import { localLiveness } from '../liveness/local/local-liveness.ts';
import { thisProcess } from '../liveness/process-space.ts';
import { storeNow } from '../liveness/store-clock.ts';
import type { Store } from '../store/store.ts';
import { leaseLost } from '../store/store-errors.ts';

export interface LeaseOptions {
  leaseMs: number;
  waitMs: number;
}

/** The store's liveness backend, or the local one (SQLite, memory, a store without one). */
export function livenessOf(store: Pick<Store, 'liveness'>): Liveness {
  return store.liveness ?? localLiveness;
}

/**
 * A lease owner for one run: where this process runs, its PID, and the token it holds on
 * `store`'s liveness backend right now, if any (src/liveness/lease-owner.ts).
 */
export async function newLeaseOwner(store: Pick<Store, 'liveness'>): Promise<string> {
  const here = thisProcess();
  const token = await livenessOf(store).token();
  return formatOwner(here.space, here.pid, secureRandomBytes(6).toString('hex'), token);
}

/** Whether the process holding `owner`'s lease is gone: the one rule, src/liveness/dead-owners.ts. */
export async function holderIsDead(store: Pick<Store, 'liveness'>, owner: string): Promise<boolean> {
  return (await deadOwners([owner], livenessOf(store))).has(owner);
}

/**
 * The time a lease's term is written and judged in: the store's one clock (storeNow; on
 * PostgreSQL the server's), never this host's wall clock, which another host's may disagree with.
 */
export function leaseNow(store: Pick<Store, 'liveness'>): Promise<number> {
  return storeNow(store);
}

/**
 * Renews the lease every third of its term while a run is in progress, so a long model call
 * keeps the session, while a dead process lets go of it within one term. Returns the stop.
 */
export function keepLease(store: Store, session: string, owner: string, leaseMs: number): () => void {
  const timer = setInterval(
    () => {
      // A failed renewal is not fatal here: the next commit is fenced and will say so. It only
      // extends: one that lands after the run released the lease must not take it back.
      leaseNow(store)
        .then((now) => store.renewLease({ session, owner, untilMs: now + leaseMs }))
        .catch(() => undefined);
    },
    Math.max(50, Math.floor(leaseMs / 3)),
  );
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Throws SESSION_BUSY unless `owner` still holds the session's lease: asked before a run
 * declares a call's outcome unknown. The store fences steps and ledger starts, not that
 * write, and a run whose lease was taken over (its process judged dead while it lived: a
 * failover, a pause) would otherwise call unknown the call the new holder is running, and a
 * person would be asked to settle it meanwhile. A read, then the write: a takeover between
 * the two is not caught, the rest are.
 */
export async function mustHoldLease(store: Pick<Store, 'getLease'>, session: string, owner: string) {
  const holder = (await store.getLease(session))?.owner ?? null;
  if (holder !== owner) throw leaseLost(session, holder, owner);
}

/**
 * Between two looks at whether the same holder is dead, while waiting for its session: a
 * holder killed just after a look is found at the next one, and a wait of 15 s costs 30
 * liveness questions, not one per 100 ms poll.
 */
const RECHECK_MS = 500;

/**
 * One run per session at a time. Waits for a busy session (a decision arriving while the
 * model is still answering) up to `waitMs`, then gives up with SESSION_BUSY. A lease whose
 * holder is dead (holderIsDead: on this host by its PID, on another through the store's
 * liveness) is taken over at once instead of after its term; the same holder is looked at
 * again at most every RECHECK_MS, so a long wait costs no query per poll.
 */
export async function acquireSessionLease(
  store: Store,
  session: string,
  owner: string,
  options: LeaseOptions,
): Promise<void> {
  const deadline = Date.now() + options.waitMs;
  let delay = 5;
  let looked: { owner: string; at: number } | null = null;
  for (;;) {
    let now = await leaseNow(store);
    if (await store.acquireLease({ session, owner, untilMs: now + options.leaseMs, nowMs: now })) return;
    const lease = await store.getLease(session);
    const holder = lease?.owner ?? null;
    const due =
      holder !== null && (looked === null || looked.owner !== holder || Date.now() - looked.at >= RECHECK_MS);
    if (holder !== null && due && (await holderIsDead(store, holder))) {
      // The judgement may have waited (CONFIRM_MS): the new term counts from now.
      now = await leaseNow(store);
      const takeOver = {
        session,
        owner,
        untilMs: now + options.leaseMs,
        nowMs: now,
        takeOverFrom: holder,
      };
      if (await store.acquireLease(takeOver)) return;
    }
    if (holder !== null && due) looked = { owner: holder, at: Date.now() };
    if (Date.now() >= deadline) {
      throw new SessionBusyError(
        `Session ${session} is being run by another process (${holder ?? 'unknown'}).`,
        {
          hint: 'Try again in a moment; nothing was lost.',
        },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 100);
  }
}
