import { describe, expect, it, vi } from 'vitest';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import { serverClock } from './server-clock.ts';

/** A server whose clock is `offsetMs` from this host's; it counts the readings. */
function server(offsetMs: number) {
  let asked = 0;
  const query = async () => {
    asked += 1;
    return [{ ms: Date.now() + offsetMs }];
  };
  return { query, asked: () => asked };
}

describe('serverClock (unit, a fake server)', () => {
  it('tells the server’s time, read once and carried forward: a wall clock jumping here does not move it', async () => {
    const { query, asked } = server(-3_600_000);
    const now = serverClock(query);
    const first = await now();
    expect(Math.abs(first - (Date.now() - 3_600_000))).toBeLessThan(50);
    const wall = Date.now.bind(Date);
    const jumped = vi.spyOn(Date, 'now').mockImplementation(() => wall() + 86_400_000);
    try {
      const second = await now();
      expect(second).toBeGreaterThanOrEqual(first);
      expect(second - first).toBeLessThan(50);
    } finally {
      jumped.mockRestore();
    }
    expect(asked()).toBe(1);
  });

  it('a server that cannot be asked: the first call fails as the query does, a later one reads again', async () => {
    let down = true;
    const now = serverClock(async () => {
      if (down) throw new Error('STORE_UNAVAILABLE');
      return [{ ms: 1000 }];
    });
    await expect(now()).rejects.toThrow('STORE_UNAVAILABLE');
    down = false;
    expect(await now()).toBeGreaterThanOrEqual(1000);
  });

  it('an answer that is no time is refused, not taken as 0', async () => {
    for (const ms of [null, '5', Number.NaN])
      await expect(serverClock(async () => [{ ms }])()).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
