import { InvalidInputError } from './errors/invalid-input-error.ts';

/**
 * The last instant a stored time can name. Stores keep times as ISO-8601 text and compare
 * them as text (`expires_at <= $now`), which orders instants only while every year has four
 * digits: past 9999 `toISOString()` writes `+010000-…`, which sorts before `2026-…`, so an
 * expiry there would read as long past and the request expire on the first pass. Before
 * year 0 it writes `-000001-…`, which sorts wrong the other way.
 */
export const LAST_INSTANT = '9999-12-31T23:59:59.999Z';
const FIRST_MS = Date.parse('0000-01-01T00:00:00.000Z');
const LAST_MS = Date.parse(LAST_INSTANT);

const HINT = `Give a time from 0000-01-01T00:00:00.000Z to ${LAST_INSTANT}, or a shorter ttl.`;

/**
 * The ISO-8601 text of `ms`, refused (INVALID_INPUT naming `what`) outside the years 0000–9999.
 * This is the one bound on stored times: every other check here and in duration.ts calls it.
 */
export function instantText(ms: number, what: string, hint: string = HINT): string {
  if (!(ms >= FIRST_MS && ms <= LAST_MS)) {
    throw new InvalidInputError(
      `${what} falls outside the years 0000 to 9999, the only ones a stored time can name (times are compared as text).`,
      { hint },
    );
  }
  return new Date(ms).toISOString();
}

/** When a request raised at `now` with a ttl of `ttlMs` expires; INVALID_INPUT past the year 9999. */
export function expiryAfter(now: Date, ttlMs: number): string {
  return instantText(
    now.getTime() + ttlMs,
    `The expiry of a request (${now.toISOString()} plus a ttl of ${ttlMs} ms)`,
  );
}

/**
 * Refuses, where a tool, port, agent or runner is defined, a ttl (`ttlMs`, given as `given`)
 * whose expiry is already past the year 9999 when counted from `now`. Clocks run forward, so
 * every request raised with it later would be refused by expiryAfter at raise time: the first
 * call that needs approval would fail, long after the mistake was made. Refused here, the
 * error names the option while whoever wrote it is looking.
 */
export function assertTtlReachable(ttlMs: number, given: string | number, what: string, now: Date): void {
  instantText(
    now.getTime() + ttlMs,
    `${what} (${shown(given)}) is too long: the expiry of a request raised now (${now.toISOString()}) with it`,
    `Give ${what} a shorter duration (from now, at most about ${yearsBetween(now.getTime(), LAST_MS)} years: an expiry must be no later than ${LAST_INSTANT}), such as 24h or 7d.`,
  );
}

/** A duration as the caller wrote it, for a message. */
function shown(given: string | number): string {
  return typeof given === 'number' ? `${given} ms` : `"${given}"`;
}

/** Whole 365-day years from `fromMs` to `toMs`: the longest duration a message suggests. */
function yearsBetween(fromMs: number, toMs: number): number {
  return Math.floor((toMs - fromMs) / (365 * 86_400_000));
}

/**
 * Refuses a retention period (`periodMs`, given as `given`) whose cutoff, `now` minus it,
 * falls before the year 0000: stored times are compared as text, and such a cutoff
 * (`-000001-…`, or no Date at all past about 270,000 years, where computing it throws an
 * untyped RangeError) cannot be compared with them. Clocks run forward, so a period that
 * fits now fits at every later purge.
 */
export function assertPeriodReachable(
  periodMs: number,
  given: string | number,
  what: string,
  now: Date,
): void {
  instantText(
    now.getTime() - periodMs,
    `${what} (${shown(given)}) is too long: its cutoff, now (${now.toISOString()}) minus it,`,
    `Give ${what} a shorter period (at most about ${yearsBetween(FIRST_MS, now.getTime())} years back from now: a cutoff must be no earlier than 0000-01-01T00:00:00.000Z), or leave the kind out to keep it for ever.`,
  );
}

/**
 * ISO-8601 as JavaScript writes and reads it without guessing: a date (UTC midnight), or a
 * date and time with its zone, `Z` or an offset. Without a zone Date.parse takes the host's
 * local time, and other shapes ("Jan 1 2026", "1") are whatever the engine makes of them: the
 * same text would name another instant on another server.
 */
const ISO_INSTANT =
  /^(\d{4}|[+-]\d{6})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/;

/**
 * Whether `text` has the ISO_INSTANT shape and names a day its month has: Date.parse rolls
 * "2026-02-30" over into 2 March and "2025-02-29" into 1 March, another day than the one
 * written, so those are unreadable here, not moved.
 */
function isoDay(text: string): boolean {
  const match = typeof text === 'string' ? ISO_INSTANT.exec(text) : null;
  if (match === null) return false;
  const [, year, month, day] = match.map(Number) as [number, number, number, number];
  const last = new Date(0);
  last.setUTCFullYear(year, month, 0);
  return day <= last.getUTCDate();
}

/**
 * A time given as a parameter (an API query bound, a CLI flag, a library option such as
 * `expiresAt`): any ISO-8601 instant with its zone, returned in the one form stores compare
 * as text, `YYYY-MM-DDTHH:MM:SS.sssZ` in UTC. Normalised, not refused: the caller meant that
 * instant, and nothing but this text is kept. Refused (INVALID_INPUT naming `what`) when
 * unreadable, without a zone, or outside the years 0000–9999.
 */
export function parseInstant(text: string, what: string, hint: string = HINT): string {
  const ms = isoDay(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new InvalidInputError(
      `${what} "${text}" is not an ISO-8601 instant with its zone, such as 2026-12-01T09:30:00Z or 2026-12-01T10:30:00+01:00.`,
      { hint },
    );
  }
  return instantText(ms, `${what} "${text}"`, hint);
}

/**
 * A time a caller passes as a library option (a workflow request's `expiresAt`): ISO-8601
 * text with its zone (parseInstant) or a `Date`, the two ways JavaScript holds an instant,
 * returned in the UTC form stores compare as text. An invalid `Date` is refused here, not
 * stored as `NaN`.
 */
export function optionInstant(value: string | Date, what: string): string {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) {
      throw new InvalidInputError(`${what} is an invalid Date.`, { hint: HINT });
    }
    return instantText(value.getTime(), `${what} (${value.toISOString()})`);
  }
  return parseInstant(value, what);
}

/**
 * Checks a time a store is about to write as it stands (a session import, a request a caller
 * built, a store query bound): readable, within the years 0000–9999, with a four-digit year
 * (`+002026-…` reads as 2026 but sorts before `0001-…`) and in the one UTC form: stores
 * compare times as text, so `…T00:00:00+02:00` would sort after `…T00:00:00.000Z` though two
 * hours earlier, and `…T00:00:00Z` after `…T00:00:00.500Z`. Refused, not rewritten: what is
 * written is what the caller handed over (an export file's times are under its digest and
 * signature), and every writer of this library already gives the UTC form.
 */
export function assertStorableInstant(text: string, what: string, hint: string = HINT): void {
  const utc = parseInstant(text, what, hint);
  if (!/^\d{4}-/.test(text)) {
    throw new InvalidInputError(`${what} "${text}" does not start with a four-digit year.`, { hint });
  }
  if (utc !== text) {
    throw new InvalidInputError(
      `${what} "${text}" is not in UTC as YYYY-MM-DDTHH:MM:SS.sssZ; give it as ${utc} (times are compared as text, so any other form sorts out of order).`,
      { hint },
    );
  }
}
