import { describe, expect, it } from 'vitest';
import {
  defaultWarningMs,
  escalationInForce,
  markSent,
  nextNudge,
  nextNudgeAt,
  nudgeSchedule,
  nudgesAt,
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

  it('nudges of one moment fire together, so every firing moves the next nudge time on', () => {
    const plan = planNudges(
      { remindAfterMs: 3_600_000, warnBeforeMs: 3_600_000 },
      created,
      '2026-12-01T12:00:00.000Z',
    )!;
    expect(plan.remindAt).toBe(plan.expiringAt);
    expect(nudgesAt(plan, plan.remindAt!)).toEqual(['reminder', 'expiring']);
    const sent = nudgesAt(plan, plan.remindAt!).reduce((n, kind) => markSent(n, kind, plan.remindAt!), plan);
    expect(nextNudgeAt(sent)).toBeNull();
  });

  it('counts an escalation only for the configured role, and only once its time has come', () => {
    const schedule = { escalateAfterMs: 3_600_000, escalateTo: 'manager' };
    const row = { escalatedTo: 'manager', createdAt: created };
    const at = (ms: number) => new Date(Date.parse(created) + ms);
    expect(escalationInForce(row, schedule, at(3_600_000))).toBe('manager');
    expect(escalationInForce(row, schedule, at(3_599_999))).toBeNull();
    expect(escalationInForce({ ...row, escalatedTo: 'admin' }, schedule, at(7_200_000))).toBeNull();
    expect(escalationInForce({ ...row, escalatedTo: null }, schedule, at(7_200_000))).toBeNull();
    expect(escalationInForce(row, undefined, at(7_200_000))).toBeNull();
  });
});
