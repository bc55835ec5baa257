import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Liveness, LivenessChange } from './liveness.ts';
import { type LivenessEvent, livenessLogLine, watchLiveness } from './liveness-log.ts';
import { localLiveness } from './local/local-liveness.ts';

/** A Liveness whose changes the test makes. */
function fakeLiveness() {
  const listeners = new Set<(change: LivenessChange) => void>();
  const liveness: Liveness = {
    ...localLiveness,
    kind: 'fake',
    onChange(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
  return {
    liveness,
    listeners,
    change(change: LivenessChange) {
      for (const listener of [...listeners]) listener(change);
    },
  };
}

const token = 'pg2a';

describe('watchLiveness', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('says nothing of the first hold; one line when lost, one when held again with how long it was gone', () => {
    const fake = fakeLiveness();
    const events: LivenessEvent[] = [];
    watchLiveness(fake.liveness, (event) => events.push(event));
    fake.change({ held: true, token });
    expect(events).toEqual([]);
    fake.change({ held: false, token, reason: 'terminating connection due to administrator command' });
    vi.advanceTimersByTime(40);
    fake.change({ held: false, token, reason: 'connect ECONNREFUSED 127.0.0.1:5432', retry: true });
    vi.advanceTimersByTime(22);
    fake.change({ held: true, token });
    expect(events).toEqual([
      {
        event: 'liveness',
        held: false,
        token,
        reason: 'terminating connection due to administrator command',
      },
      { event: 'liveness', held: true, token, lostMs: 62, attempts: 1 },
    ]);
    expect(events.map((event) => livenessLogLine(event, 'server'))).toEqual([
      'Lost the liveness lock (terminating connection due to administrator command); holding it again. Meanwhile other hosts may take over the sessions this server runs.',
      'Holding the liveness lock again after 62 ms: other hosts see this server alive.',
    ]);
    // Held again: no reminder follows.
    vi.advanceTimersByTime(10 * 60_000);
    expect(events).toHaveLength(2);
  });

  it('while it stays lost: no line per failed attempt, a reminder after 30 s, 1, 2, 4, 8 min, then every 5 min', () => {
    const fake = fakeLiveness();
    const events: LivenessEvent[] = [];
    watchLiveness(fake.liveness, (event) => events.push(event));
    fake.change({ held: true, token });
    fake.change({ held: false, token, reason: 'the connection was closed' });
    // Five failed attempts a second for 20 minutes, as while a server refuses.
    for (let ms = 0; ms < 20 * 60_000; ms += 200) {
      vi.advanceTimersByTime(200);
      fake.change({ held: false, token, reason: `attempt at ${ms + 200} ms`, retry: true });
    }
    const reminders = events.filter((event) => 'still' in event);
    expect(reminders.map((event) => (event as { lostMs: number }).lostMs / 1000)).toEqual([
      30, 60, 120, 240, 480, 780, 1080,
    ]);
    // Each says why the latest attempt before it failed.
    expect(reminders[0]).toEqual({
      event: 'liveness',
      held: false,
      still: true,
      token,
      lostMs: 30_000,
      attempts: 149,
      reason: 'attempt at 29800 ms',
    });
    expect(livenessLogLine(reminders[0]!, 'worker')).toBe(
      'Still not holding the liveness lock after 30.0 s (149 failed attempts; the last: attempt at 29800 ms). Meanwhile other hosts may take over the sessions this worker runs.',
    );
    expect(livenessLogLine(reminders[5]!, 'worker')).toMatch(
      /^Still not holding the liveness lock after 13 min 0 s /,
    );
    fake.change({ held: true, token });
    expect(events.at(-1)).toEqual({
      event: 'liveness',
      held: true,
      token,
      lostMs: 1_200_000,
      attempts: 6000,
    });
    expect(livenessLogLine(events.at(-1)!, 'worker')).toBe(
      'Holding the liveness lock again after 20 min 0 s: other hosts see this worker alive.',
    );
    expect(events).toHaveLength(1 + reminders.length + 1);
  });

  it('a second loss is told like the first, with its own count; a retry while held, or before any loss, is ignored', () => {
    const fake = fakeLiveness();
    const events: LivenessEvent[] = [];
    watchLiveness(fake.liveness, (event) => events.push(event), { firstReminderMs: 100 });
    fake.change({ held: false, token, reason: 'before', retry: true });
    fake.change({ held: false, token, reason: 'one' });
    fake.change({ held: false, token, reason: 'one again' });
    fake.change({ held: false, token, reason: 'failed', retry: true });
    fake.change({ held: true, token });
    fake.change({ held: false, token, reason: 'two' });
    vi.advanceTimersByTime(100);
    fake.change({ held: true, token });
    expect(events).toEqual([
      { event: 'liveness', held: false, token, reason: 'one' },
      { event: 'liveness', held: true, token, lostMs: 0, attempts: 1 },
      { event: 'liveness', held: false, token, reason: 'two' },
      { event: 'liveness', held: false, still: true, token, lostMs: 100, attempts: 0, reason: 'two' },
      { event: 'liveness', held: true, token, lostMs: 100, attempts: 0 },
    ]);
  });

  it('stopped: unsubscribed, and a pending reminder never comes', () => {
    const fake = fakeLiveness();
    const events: LivenessEvent[] = [];
    const stop = watchLiveness(fake.liveness, (event) => events.push(event));
    fake.change({ held: false, token, reason: 'lost' });
    expect(fake.listeners.size).toBe(1);
    stop();
    expect(fake.listeners.size).toBe(0);
    vi.advanceTimersByTime(60 * 60_000);
    expect(events).toEqual([{ event: 'liveness', held: false, token, reason: 'lost' }]);
  });
});
