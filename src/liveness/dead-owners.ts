import { parseOwner } from './lease-owner.ts';
import type { Liveness } from './liveness.ts';
import { type ProcessSpace, pidIsGone, thisProcess } from './process-space.ts';

/**
 * How long a token must stay released before its holder is judged dead: it is asked for
 * again after this pause. A live process whose liveness connection dropped locks its token
 * again at once (postgres-liveness.ts: first attempt immediately, then at most MAX_BACKOFF_MS
 * apart, however long the server was away; 44–84 ms measured after a terminated backend), so
 * a token seen released twice, half a second apart, is not a reconnect in progress. The cost:
 * a dead holder on another host is taken over about half a second later than it could be;
 * nothing else waits.
 */
export const CONFIRM_MS = 500;

export type LocalVerdict = 'alive' | 'dead' | { ask: string };

/**
 * What this process can tell about `owner` by itself, pure given where it runs and a PID
 * probe:
 * - an owner that does not parse: alive (never judged dead on a guess);
 * - a holder in this process's space (same kernel boot and PID namespace; for owners with a
 *   bare host name, the same host name, as before spaces existed): dead exactly when its PID
 *   is gone, and never this process itself;
 * - a holder elsewhere with a token: ask the Liveness backend;
 * - a holder elsewhere without one (written before tokens, or while its process held none):
 *   alive, so its lease lapses after its term.
 */
export function judgeLocally(
  owner: string,
  here: ProcessSpace,
  isGone: (pid: number) => boolean = pidIsGone,
): LocalVerdict {
  const parsed = parseOwner(owner);
  if (parsed === null) return 'alive';
  const sameSpace =
    parsed.space === here.space || (!parsed.space.includes('/') && parsed.space === here.hostname);
  if (sameSpace) {
    if (parsed.pid === here.pid) return 'alive';
    return isGone(parsed.pid) ? 'dead' : 'alive';
  }
  return parsed.token === null ? 'alive' : { ask: parsed.token };
}

export interface DeadOwnersOptions {
  here?: ProcessSpace;
  isGone?: (pid: number) => boolean;
  confirmMs?: number;
}

/**
 * The one rule for "is the process holding this lease dead", asked wherever a lease may be
 * taken over before its term (acquireSessionLease, the stalled sweeps, the worker takeover
 * watch): of `owners`, those whose process is gone. Holders this process can judge by PID
 * cost nothing; the rest are asked about in one `released` call, and the ones released are
 * asked about once more after `confirmMs` (see CONFIRM_MS). Throws what the backend throws
 * (STORE_UNAVAILABLE); it writes nothing.
 */
export async function deadOwners(
  owners: Iterable<string>,
  liveness: Liveness,
  options: DeadOwnersOptions = {},
): Promise<Set<string>> {
  const here = options.here ?? thisProcess();
  const dead = new Set<string>();
  const asking = new Map<string, string[]>();
  for (const owner of new Set(owners)) {
    const verdict = judgeLocally(owner, here, options.isGone);
    if (verdict === 'dead') dead.add(owner);
    else if (verdict !== 'alive') asking.set(verdict.ask, [...(asking.get(verdict.ask) ?? []), owner]);
  }
  if (asking.size === 0) return dead;
  let released = await liveness.released([...asking.keys()]);
  const confirmMs = options.confirmMs ?? CONFIRM_MS;
  if (released.size > 0 && confirmMs > 0) {
    await new Promise((resolve) => setTimeout(resolve, confirmMs));
    const again = await liveness.released([...released]);
    released = new Set([...released].filter((token) => again.has(token)));
  }
  for (const token of released) for (const owner of asking.get(token) ?? []) dead.add(owner);
  return dead;
}
