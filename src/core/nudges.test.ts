import { describe, expect, it } from 'vitest';
import {
  defaultWarningMs,
  markSent,
  nextNudge,
  nextNudgeAt,
  nudgeSchedule,
  planNudges,
  readNudges,
  withDefaultWarning,
} from './nudges.ts';

const created = '2026-12-01T10:00:00.000Z';
const expires = '2026-12-01T12:00:00.000Z';
const at = (minutes: number) => new Date(Date.parse(created) + minutes * 60_000).toISOString();

describe('nudges', () => {
  it('plans a reminder, an escalation and a warning from the raise time and the expiry', () => {
    const schedule = nudgeSchedule(
      { remindAfter: '10m', escalateAfter: '1h', escalateTo: 'manager', warnBefore: '30m' },
      'tool t',
    );
    expect(planNudges(schedule, created, expires)).toEqual({
      remindAt: at(10),
      remindedAt: null,
      escalateAt: at(60),
      escalateTo: 'manager',
      escalatedAt: null,
      expiringAt: at(90),
      expiringSentAt: null,
    });
  });

  it('leaves out a nudge at or after the expiry, and plans nothing without a schedule', () => {
    const schedule = nudgeSchedule({ remindAfter: '3h', warnBefore: '5h' }, 'tool t');
    expect(planNudges(schedule, created, expires)).toBeNull();
    expect(planNudges(undefined, created, expires)).toBeNull();
    expect(nudgeSchedule({}, 'tool t')).toBeUndefined();
  });

  it('fires in time order, each once, and then has none left', () => {
    const plan = planNudges(nudgeSchedule({ remindAfter: '1h', warnBefore: '90m' }, 't'), created, expires)!;
    // The warning (30m in) comes before the reminder (60m in).
    expect(nextNudge(plan)).toEqual({ kind: 'expiring', at: at(30) });
    const warned = markSent(plan, 'expiring', at(31));
    expect(nextNudge(warned)).toEqual({ kind: 'reminder', at: at(60) });
    const reminded = markSent(warned, 'reminder', at(61));
    expect(nextNudge(reminded)).toBeNull();
    expect(nextNudgeAt(reminded)).toBeNull();
    expect(nextNudgeAt(null)).toBeNull();
  });

  it('refuses an escalation without its role (or a role without a time) and bad durations', () => {
    expect(() => nudgeSchedule({ escalateAfter: '1h' }, 'tool t')).toThrow(
      /escalateAfter and escalateTo together/,
    );
    expect(() => nudgeSchedule({ escalateTo: 'manager' }, 'tool t')).toThrow(/together/);
    expect(() => nudgeSchedule({ escalateAfter: '1h', escalateTo: ' ' }, 'tool t')).toThrow(/together/);
    expect(() => nudgeSchedule({ remindAfter: 'soon' }, 'tool t')).toThrow(/remindAfter of tool t/);
    expect(() => nudgeSchedule({ warnBefore: 0 }, 'port p')).toThrow(/warnBefore of port p/);
  });

  it('reads stored nudges back, and says when a value is not nudges', () => {
    const plan = planNudges(nudgeSchedule({ remindAfter: '1h' }, 't'), created, expires)!;
    expect(readNudges(JSON.parse(JSON.stringify(plan)))).toEqual(plan);
    expect(readNudges(null)).toBeNull();
    expect(readNudges({ ...plan, remindAt: 5 })).toBeUndefined();
    expect(readNudges([plan])).toBeUndefined();
  });

  it("takes the deployment's warning lead time where the tool sets none, never over the tool's own", () => {
    expect(withDefaultWarning(undefined, 60_000)).toEqual({ warnBeforeMs: 60_000 });
    expect(withDefaultWarning({ remindAfterMs: 5 }, 60_000)).toEqual({
      remindAfterMs: 5,
      warnBeforeMs: 60_000,
    });
    expect(withDefaultWarning({ warnBeforeMs: 5 }, 60_000)).toEqual({ warnBeforeMs: 5 });
    expect(withDefaultWarning({ remindAfterMs: 5 }, undefined)).toEqual({ remindAfterMs: 5 });
    expect(defaultWarningMs('30m')).toBe(1_800_000);
    expect(defaultWarningMs('')).toBeUndefined();
    expect(() => defaultWarningMs('soon')).toThrow(/COUNTERSIGN_WARN_BEFORE/);
  });
});
