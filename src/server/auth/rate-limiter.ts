export interface RateLimiter {
  /** Seconds until the key may try again, or 0 when it may try now. */
  blockedFor(key: string): number;
  /** Counts one failed attempt against the key. */
  fail(key: string): void;
  reset(key: string): void;
}

/**
 * Failed sign-ins per client address in a sliding window. Only failures count, so a
 * support person who signs in all day is never slowed down.
 */
export function createRateLimiter(options: {
  maxFailures: number;
  windowMs: number;
  now?: () => number;
}): RateLimiter {
  const now = options.now ?? Date.now;
  const failures = new Map<string, number[]>();
  const recent = (key: string): number[] => {
    const cutoff = now() - options.windowMs;
    const kept = (failures.get(key) ?? []).filter((at) => at > cutoff);
    if (kept.length === 0) failures.delete(key);
    else failures.set(key, kept);
    return kept;
  };
  return {
    blockedFor(key) {
      const kept = recent(key);
      if (kept.length < options.maxFailures) return 0;
      const oldest = kept[kept.length - options.maxFailures]!;
      return Math.max(1, Math.ceil((oldest + options.windowMs - now()) / 1000));
    },
    fail(key) {
      if (failures.size > 10_000) failures.clear();
      failures.set(key, [...recent(key), now()]);
    },
    reset(key) {
      failures.delete(key);
    },
  };
}
