import type { NudgeKind, RequestNudges } from './approval.ts';
import { parseDuration } from './duration.ts';
import { ConfigError } from './errors/config-error.ts';

/**
 * When a tool's or port's waiting requests nudge people, in milliseconds: a reminder
 * `remindAfterMs` after it was raised, an escalation to `escalateTo` after `escalateAfterMs`,
 * and `request.expiring` `warnBeforeMs` before it expires. Each is optional.
 */
export interface NudgeSchedule {
  remindAfterMs?: number;
  escalateAfterMs?: number;
  escalateTo?: string;
  warnBeforeMs?: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The nudges of a request raised at `createdAt` that expires at `expiresAt`; null when the
 * schedule has none. A nudge that would fall at or after the expiry is left out (the expiry
 * is the last word), so is a warning before the request was even raised.
 */
export function planNudges(
  schedule: NudgeSchedule | undefined,
  createdAt: string,
  expiresAt: string,
): RequestNudges | null {
  if (schedule === undefined) return null;
  const created = Date.parse(createdAt);
  const expires = Date.parse(expiresAt);
  const within = (ms: number | undefined): string | null =>
    ms === undefined || !(ms > created) || !(ms < expires) ? null : iso(ms);
  const remindAt = within(
    schedule.remindAfterMs === undefined ? undefined : created + schedule.remindAfterMs,
  );
  const escalateAt =
    schedule.escalateTo === undefined
      ? null
      : within(schedule.escalateAfterMs === undefined ? undefined : created + schedule.escalateAfterMs);
  const expiringAt = within(
    schedule.warnBeforeMs === undefined ? undefined : expires - schedule.warnBeforeMs,
  );
  if (remindAt === null && escalateAt === null && expiringAt === null) return null;
  return {
    remindAt,
    remindedAt: null,
    escalateAt,
    escalateTo: escalateAt === null ? null : (schedule.escalateTo ?? null),
    escalatedAt: null,
    expiringAt,
    expiringSentAt: null,
  };
}

const order: readonly NudgeKind[] = ['reminder', 'escalated', 'expiring'];

function slot(nudges: RequestNudges, kind: NudgeKind): { at: string | null; sent: string | null } {
  switch (kind) {
    case 'reminder':
      return { at: nudges.remindAt, sent: nudges.remindedAt };
    case 'escalated':
      return { at: nudges.escalateAt, sent: nudges.escalatedAt };
    case 'expiring':
      return { at: nudges.expiringAt, sent: nudges.expiringSentAt };
  }
}

/** The next nudge to fire: the earliest configured one not yet sent (ties in order reminder, escalation, warning). */
export function nextNudge(nudges: RequestNudges | null): { kind: NudgeKind; at: string } | null {
  if (nudges === null) return null;
  let next: { kind: NudgeKind; at: string } | null = null;
  for (const kind of order) {
    const { at, sent } = slot(nudges, kind);
    if (at !== null && sent === null && (next === null || at < next.at)) next = { kind, at };
  }
  return next;
}

/**
 * Every nudge not yet sent that falls at exactly `at` (in order reminder, escalation,
 * warning): they fire together, in one compare-and-set, so that each firing moves the row's
 * next nudge time strictly later. Fired one by one, two nudges at the same moment would leave
 * the next time unchanged after the first, and a second process that read the row before it
 * would win the same compare-and-set again and send the first one twice.
 */
export function nudgesAt(nudges: RequestNudges, at: string): NudgeKind[] {
  return order.filter((kind) => {
    const entry = slot(nudges, kind);
    return entry.at === at && entry.sent === null;
  });
}

/** The row's next nudge time, the column the due-query's index orders by; null when none is left. */
export const nextNudgeAt = (nudges: RequestNudges | null): string | null => nextNudge(nudges)?.at ?? null;

/** The nudges after `kind` fired at `at`. */
export function markSent(nudges: RequestNudges, kind: NudgeKind, at: string): RequestNudges {
  switch (kind) {
    case 'reminder':
      return { ...nudges, remindedAt: at };
    case 'escalated':
      return { ...nudges, escalatedAt: at };
    case 'expiring':
      return { ...nudges, expiringSentAt: at };
  }
}

/** How a tool or a port declares its nudges: durations as `15m`, `2h`, `1d` or milliseconds. */
export interface NudgeOptions {
  /** Remind whoever may decide once it has waited this long (`request.reminder`). */
  remindAfter?: string | number;
  /** Escalate to `escalateTo` once it has waited this long (`request.escalated`). */
  escalateAfter?: string | number;
  /** The role it escalates to; its holders may then decide it too. */
  escalateTo?: string;
  /** Warn this long before it expires (`request.expiring`). */
  warnBefore?: string | number;
}

/** The schedule a tool's or port's options give; undefined when they set none. Bad options are CONFIG errors. */
export function nudgeSchedule(options: NudgeOptions, what: string): NudgeSchedule | undefined {
  const { remindAfter, escalateAfter, escalateTo, warnBefore } = options;
  if ((escalateAfter === undefined) !== (escalateTo === undefined) || escalateTo?.trim() === '') {
    throw new ConfigError(
      `${what} needs escalateAfter and escalateTo together (a time and the role it escalates to).`,
      {
        hint: "For example escalateAfter: '2h', escalateTo: 'manager'.",
      },
    );
  }
  const schedule: NudgeSchedule = {
    ...(remindAfter === undefined
      ? {}
      : { remindAfterMs: parseDuration(remindAfter, `remindAfter of ${what}`) }),
    ...(escalateAfter === undefined
      ? {}
      : { escalateAfterMs: parseDuration(escalateAfter, `escalateAfter of ${what}`), escalateTo }),
    ...(warnBefore === undefined ? {} : { warnBeforeMs: parseDuration(warnBefore, `warnBefore of ${what}`) }),
  };
  return Object.keys(schedule).length === 0 ? undefined : schedule;
}

const nudgeFields = [
  'remindAt',
  'remindedAt',
  'escalateAt',
  'escalateTo',
  'escalatedAt',
  'expiringAt',
  'expiringSentAt',
] as const satisfies readonly (keyof RequestNudges)[];

/**
 * Stored nudges read back (a row's column, an audit entry's field): null for none, undefined
 * when the value is not nudges (every field a string or null), for the caller to report.
 */
export function readNudges(value: unknown): RequestNudges | null | undefined {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'object' || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const nudges = {} as Record<(typeof nudgeFields)[number], string | null>;
  for (const field of nudgeFields) {
    const item = record[field] ?? null;
    if (item !== null && typeof item !== 'string') return undefined;
    nudges[field] = item;
  }
  return nudges;
}

/**
 * The deployment's warning lead time (`COUNTERSIGN_WARN_BEFORE`, or an agent's `warnBefore`)
 * for a tool or port that sets none of its own; the tool's or port's own always wins.
 */
export function withDefaultWarning(
  schedule: NudgeSchedule | undefined,
  warnBeforeMs: number | undefined,
): NudgeSchedule | undefined {
  if (warnBeforeMs === undefined || schedule?.warnBeforeMs !== undefined) return schedule;
  return { ...schedule, warnBeforeMs };
}

/** `COUNTERSIGN_WARN_BEFORE` (or the given value) as milliseconds; undefined when unset. */
export function defaultWarningMs(value: string | number | undefined = process.env.COUNTERSIGN_WARN_BEFORE) {
  return value === undefined || value === ''
    ? undefined
    : parseDuration(value, 'COUNTERSIGN_WARN_BEFORE (warnBefore)');
}

/**
 * The escalation that widens who may decide: the row's `escalatedTo`, but only when it is the
 * role the tool or port (as configured now) escalates to, and only once the configured
 * escalation time has come (`escalateAfter` past the request's creation, at `now`). So an
 * edited row can neither hand the request to a role nobody configured (as an edited row
 * cannot drop its required role) nor hand it to the configured role before its time.
 */
export function escalationInForce(
  request: { escalatedTo: string | null; createdAt: string },
  configured: NudgeSchedule | undefined,
  now: Date,
): string | null {
  const { escalatedTo } = request;
  if (escalatedTo === null || configured === undefined || escalatedTo !== configured.escalateTo) return null;
  const due = Date.parse(request.createdAt) + (configured.escalateAfterMs ?? Number.NaN);
  return due <= now.getTime() ? escalatedTo : null;
}
