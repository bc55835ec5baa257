import type { DueWork } from '../ports/request-timers.ts';
import type { Tables } from './tables.ts';

/**
 * The store watcher's three questions in one statement, for both SQL backends: the soonest
 * expiry and the soonest nudge of pending requests (the first entry of each partial index)
 * and whether any session is flagged to be continued. `indexed` names the index a sub-query
 * must walk (SQLite's INDEXED BY; PostgreSQL's planner needs no hint: '').
 */
export function dueWorkSql(
  t: Pick<Tables, 'approvals' | 'sessions'>,
  indexed: (index: string) => string = () => '',
): string {
  return `SELECT
  (SELECT expires_at FROM ${t.approvals}${indexed('approvals_due')} WHERE status = 'pending'
    ORDER BY expires_at LIMIT 1) AS expiry_at,
  (SELECT next_nudge_at FROM ${t.approvals}${indexed('approvals_nudge_due')}
    WHERE status = 'pending' AND next_nudge_at IS NOT NULL ORDER BY next_nudge_at LIMIT 1) AS nudge_at,
  EXISTS (SELECT 1 FROM ${t.sessions}${indexed('sessions_continue_due')} WHERE continue_due IS NOT NULL) AS stalled`;
}

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
