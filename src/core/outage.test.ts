import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { trackOutage } from './outage.ts';

describe('outage reminders', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('go on when the reminder (a logger) throws', async () => {
    const told: number[] = [];
    const outage = trackOutage(
      ({ ms }) => {
        told.push(ms);
        throw new Error('the log is closed');
      },
      { firstReminderMs: 10, reminderGapMaxMs: 40 },
    );
    outage.begin('down');
    await vi.advanceTimersByTimeAsync(100);
    // 10, then each when the outage has lasted twice as long, at most 40 apart.
    expect(told).toEqual([10, 20, 40, 80]);
    outage.stop();
  });
});
