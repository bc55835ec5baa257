import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../core/errors/store-unavailable-error.ts';
import { storeNow } from './store-clock.ts';

describe('storeNow: the clock claims and leases are written and judged on', () => {
  it('a store other hosts share answers with its own clock, whatever this host’s says', async () => {
    const shared = { liveness: { now: async () => 1_000 } };
    expect(await storeNow(shared)).toBe(1_000);
    expect(await storeNow(shared, () => 9_000_000)).toBe(1_000);
  });

  it('a store only this host uses runs on the caller’s clock (Date.now unless given)', async () => {
    expect(await storeNow({}, () => 42)).toBe(42);
    expect(await storeNow({ liveness: undefined }, () => 43)).toBe(43);
    const before = Date.now();
    const now = await storeNow({});
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });

  it('a shared clock that cannot be read fails the call: no host falls back to its own', async () => {
    const down = {
      liveness: {
        now: async () => {
          throw new StoreUnavailableError('down');
        },
      },
    };
    await expect(storeNow(down, () => 42)).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
