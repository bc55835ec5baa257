import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import type { ServerEnv } from '../server-context.ts';

/** The cookie the inbox's script sets from the browser's own time zone. */
export const TZ_COOKIE = 'countersign_tz';

/**
 * An IANA time zone name the runtime knows (e.g. `Europe/Berlin`), or null. Checked, not
 * trusted: the name comes from a cookie and ends up in the page.
 */
export function knownTimeZone(name: unknown): string | null {
  if (typeof name !== 'string' || name.length === 0 || name.length > 64) return null;
  if (!/^[A-Za-z0-9_+\-/]+$/.test(name)) return null;
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: name });
    return name;
  } catch {
    return null;
  }
}

/** The viewer's time zone: the one their browser reported, else UTC (said so on the page). */
export function timeZoneOf(c: Context<ServerEnv>): string {
  return knownTimeZone(getCookie(c, TZ_COOKIE)) ?? 'UTC';
}

const formats = new Map<string, Intl.DateTimeFormat>();

function formatOf(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      year: 'numeric',
      month: 'short',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      timeZoneName: 'short',
    });
    // One formatter per zone in use: a handful, never one per request.
    if (formats.size < 500) formats.set(timeZone, format);
  }
  return format;
}

/**
 * "1 Dec 2026, 09:41 CET": an instant as the approver reads it, in their zone, with the zone
 * named so a time is never ambiguous. An unreadable instant is shown as stored.
 */
export function localTime(iso: string, timeZone: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return formatOf(timeZone).format(ms);
}
