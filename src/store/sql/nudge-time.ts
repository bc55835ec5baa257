import { nextNudgeAt } from '../../core/nudges.ts';
import type { NudgeTimeChange } from '../ports/request-timers.ts';
import { nudgesOf, type Row } from '../row-readers.ts';

/** The columns `alignNudgeTime` reads of the row it locks. */
export const NUDGE_TIME_COLUMNS = 'nudges, next_nudge_at';

/**
 * What puts a row's `next_nudge_at` back in step with its nudges: the time `nextNudgeAt`
 * gives, as row-values.ts writes it with every insert and advanceNudge with every nudge; null
 * when the column already holds it. Both SQL backends' `alignNudgeTime` decide by this.
 */
export function nudgeTimeChange(row: Row, id: string): NudgeTimeChange | null {
  const now = nextNudgeAt(nudgesOf(row, `approvals(id=${id})`));
  const stored = row.next_nudge_at;
  const was = stored === null || stored === undefined ? null : String(stored);
  return was === now ? null : { was, now };
}
