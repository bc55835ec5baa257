import { addressGroup } from '../http/client-address.ts';

export interface RateLimiter {
  /**
   * Seconds until wrong credentials from this address are answered with 401 again, or 0.
   * Asked only after a credential was found wrong: a correct one is never refused.
   */
  blockedFor(address: string): number;
  /** Counts one wrong credential from the address (and against the server-wide budget). */
  fail(address: string): void;
  /** A successful sign-in from the address clears its count (not the server-wide one). */
  reset(address: string): void;
  /** Addresses currently counted: bounded by `maxAddresses`. */
  readonly size: number;
}

const EVERYONE = '*';

/**
 * Wrong tokens (bearer or sign-in form) in a sliding window, per client address (IPv6 by
 * /64) and server-wide. Only failures count and only failures are refused, so a support
 * person who signs in all day, or an API client behind the same NAT as an attacker, is never
 * slowed down. The server-wide budget catches guessing spread over many addresses; the
 * oldest address is forgotten when `maxAddresses` are counted, which that budget makes safe.
 */
export function createRateLimiter(options: {
  maxFailures: number;
  windowMs: number;
  /** Failures from all addresses together (default 10 × maxFailures). */
  maxFailuresTotal?: number;
  /** Addresses counted at once (default 10,000). */
  maxAddresses?: number;
  now?: () => number;
}): RateLimiter {
  const now = options.now ?? Date.now;
  const maxTotal = options.maxFailuresTotal ?? 10 * options.maxFailures;
  const maxAddresses = options.maxAddresses ?? 10_000;
  const failures = new Map<string, number[]>();
  const addresses = () => (failures.has(EVERYONE) ? failures.size - 1 : failures.size);
  const recent = (key: string): number[] => {
    const cutoff = now() - options.windowMs;
    const kept = (failures.get(key) ?? []).filter((at) => at > cutoff);
    if (kept.length === 0) failures.delete(key);
    else failures.set(key, kept);
    return kept;
  };
  const wait = (key: string, max: number): number => {
    const kept = recent(key);
    if (kept.length < max) return 0;
    const oldest = kept[kept.length - max]!;
    return Math.max(1, Math.ceil((oldest + options.windowMs - now()) / 1000));
  };
  const count = (key: string, max: number) => {
    // Only the newest `max` failures decide anything: older ones are not kept.
    const kept = [...recent(key), now()].slice(-max);
    failures.delete(key);
    failures.set(key, kept);
  };
  return {
    blockedFor(address) {
      return Math.max(wait(addressGroup(address), options.maxFailures), wait(EVERYONE, maxTotal));
    },
    fail(address) {
      const key = addressGroup(address);
      if (!failures.has(key)) {
        // Map order is insertion order and count() re-inserts, so the first keys are the stalest.
        for (const stalest of failures.keys()) {
          if (addresses() < maxAddresses) break;
          if (stalest !== EVERYONE) failures.delete(stalest);
        }
      }
      count(key, options.maxFailures);
      count(EVERYONE, maxTotal);
    },
    reset(address) {
      failures.delete(addressGroup(address));
    },
    get size() {
      return addresses();
    },
  };
}
