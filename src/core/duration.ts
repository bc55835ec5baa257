import { InvalidInputError } from './errors/invalid-input-error.ts';
import { assertPeriodReachable, assertTtlReachable } from './instant.ts';

const DAY = 86_400_000;
// `w` and `y` (365 days) are for retention periods (COUNTERSIGN_RETENTION=audit=7y).
const units: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: DAY,
  w: 7 * DAY,
  y: 365 * DAY,
};

// A number and an optional unit, the one spelling every duration here takes.
const DURATION = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w|y)?\s*$/;

/**
 * Whether `text` is a duration with its unit (`24h`, `2w`): for an input that takes either a
 * time or a duration (a stats window's `since`), where a bare number is neither.
 */
export function isDurationWithUnit(text: string): boolean {
  return DURATION.exec(text)?.[2] !== undefined;
}

/** Parses `2s`, `15m`, `24h`, `7d`, `2w`, `7y`, `500ms` or a plain number of milliseconds. */
export function parseDuration(text: string | number, what = 'duration'): number {
  if (typeof text === 'number') {
    if (Number.isFinite(text) && text > 0) return text;
    throw new InvalidInputError(`${what} must be a positive number of milliseconds, got ${text}.`);
  }
  const match = DURATION.exec(text);
  if (!match) {
    throw new InvalidInputError(`${what} "${text}" is not a duration.`, {
      hint: 'Use a number with a unit: 500ms, 2s, 15m, 24h, 7d, 2w or 7y.',
    });
  }
  const value = Number(match[1]) * (units[match[2] ?? 'ms'] ?? 1);
  if (value <= 0) throw new InvalidInputError(`${what} must be longer than zero.`);
  return value;
}

/**
 * How long a request waits, as a tool, port, agent or runner defines it (`ttl`,
 * `approvalTtl`, `requestTtl`, COUNTERSIGN_APPROVAL_TTL): a duration (parseDuration) that can
 * still produce an expiry a store can hold, counted from `now` (instant.ts). Every place
 * that takes a ttl at definition time calls this, so none accepts what raising would refuse.
 */
export function parseTtl(value: string | number, what: string, now: Date = new Date()): number {
  const ms = parseDuration(value, what);
  assertTtlReachable(ms, value, what, now);
  return ms;
}

/**
 * A retention period (COUNTERSIGN_RETENTION, a purge's or a server's `policy`): a duration
 * (parseDuration) whose cutoff, counted back from `now`, is still a time a store can compare
 * (instant.ts). Every place that takes a period calls this, so none accepts what a purge
 * could not compute.
 */
export function parseRetentionPeriod(value: string | number, what: string, now: Date = new Date()): number {
  const ms = parseDuration(value, what);
  assertPeriodReachable(ms, value, what, now);
  return ms;
}
