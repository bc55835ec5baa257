import { parseDuration } from '../core/duration.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import type { DecisionStats, DecisionStatsPort } from '../store/ports/decision-stats.ts';

/** The window when none is given: the last seven days. */
export const DEFAULT_STATS_WINDOW = '7d';

/**
 * `since` / `until` as a person or a URL gives them: an ISO-8601 instant, or a duration
 * back from now (`24h`, `7d`). The default window is the last seven days, up to now.
 */
export function statsWindow(
  input: { since?: string; until?: string },
  now: Date,
): { since: string; until: string } {
  const instant = (text: string, name: string): string => {
    if (/^\d+(\.\d+)?\s*(ms|s|m|h|d)$/.test(text.trim()))
      return new Date(now.getTime() - parseDuration(text, name)).toISOString();
    const parsed = Date.parse(text);
    if (Number.isNaN(parsed))
      throw new InvalidInputError(`${name} "${text}" is neither an ISO-8601 time nor a duration.`, {
        hint: 'Give a time like 2026-12-01T00:00:00Z, or how far back: 24h, 7d.',
      });
    return new Date(parsed).toISOString();
  };
  const since = instant(input.since ?? DEFAULT_STATS_WINDOW, 'since');
  const until = input.until === undefined ? now.toISOString() : instant(input.until, 'until');
  if (!(since < until))
    throw new InvalidInputError(`since (${since}) must be before until (${until}).`, {
      hint: 'Leave until out for "up to now".',
    });
  return { since, until };
}

/**
 * The team's numbers over a window, as `/v1/stats` serves them and the inbox's stats page
 * renders them: one function, so both show the same data.
 */
export async function requestStats(
  book: DecisionStatsPort,
  input: { since?: string; until?: string },
  now: Date,
): Promise<DecisionStats> {
  return book.decisionStats(statsWindow(input, now));
}
