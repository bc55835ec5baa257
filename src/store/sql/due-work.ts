import type { DueWork } from '../ports/request-timers.ts';

/**
 * DueWork from the first entry of each due index (the soonest expiry and the soonest nudge of
 * pending requests) and the stalled flag: what both SQL backends' one statement returns.
 * Times are ISO-8601 in UTC as stored, so they compare as text.
 */
export function dueWorkOf(
  at: string,
  expiryAt: string | null,
  nudgeAt: string | null,
  stalled: boolean,
): DueWork {
  const soonest = [expiryAt, nudgeAt].filter((time): time is string => time !== null).sort()[0] ?? null;
  return {
    expiry: expiryAt !== null && expiryAt <= at,
    nudges: nudgeAt !== null && nudgeAt <= at,
    stalled,
    next: soonest,
  };
}
