import type { Store } from '../../src/store/store.ts';

/** Calls per Store method name, in the order first called. */
export type StoreCalls = Record<string, number>;

/**
 * A Store that counts its calls per method and otherwise is the store it wraps: for tests
 * that pin how many reads and writes one operation costs, so a regression fails.
 */
export function countingStore<S extends Store>(
  inner: S,
): { store: S; calls: () => StoreCalls; reset(): void } {
  let counts: StoreCalls = {};
  const store = new Proxy(inner, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      return (...args: unknown[]) => {
        counts[property] = (counts[property] ?? 0) + 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return {
    store,
    calls: () => ({ ...counts }),
    reset: () => {
      counts = {};
    },
  };
}
