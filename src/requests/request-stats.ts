import { isDurationWithUnit, parseDuration } from '../core/duration.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { instantText, parseInstant } from '../core/instant.ts';
import type { DecisionStats, DecisionStatsPort } from '../store/ports/decision-stats.ts';

/** The window when none is given: the last seven days. */
export const DEFAULT_STATS_WINDOW = '7d';

/**
 * `since` / `until` as a person or a URL gives them: an ISO-8601 instant with its zone
 * (normalised to UTC by parseInstant, so `+02:00` bounds compare rightly with the stored
 * times), or a duration back from now (`24h`, `7d`) whose instant must still be one a store
 * can compare (instantText). The default window is the last seven days, up to now.
 */
export function statsWindow(
  input: { since?: string; until?: string },
  now: Date,
): { since: string; until: string } {
  const hint = 'Give a time like 2026-12-01T00:00:00Z, or how far back: 24h, 7d, 2w.';
  const instant = (text: string, name: string): string => {
    // A library caller's bound may be anything (a Date, a number): named, not a TypeError.
    if (typeof text !== 'string')
      throw new InvalidInputError(
        `${name} must be text, an ISO-8601 time or a duration; got ${(text as unknown) instanceof Date ? 'a Date' : typeof text}.`,
        { hint },
      );
    if (isDurationWithUnit(text))
      return instantText(now.getTime() - parseDuration(text, name), `${name} "${text}" back from now`, hint);
    return parseInstant(text, name, hint);
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
