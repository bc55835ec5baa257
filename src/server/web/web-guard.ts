import type { Context } from 'hono';
import { callerOf, type ServerEnv } from '../server-context.ts';
import type { Viewer } from './approval-card.ts';

/** The signed-in viewer of an inbox page, or the redirect to the sign-in page. */
export function viewerOr(c: Context<ServerEnv>): Viewer | Response {
  const caller = callerOf(c);
  if (caller) return { identity: caller.identity, csrf: caller.csrf };
  const url = new URL(c.req.url);
  return c.redirect(`/login?next=${encodeURIComponent(url.pathname + url.search)}`, 303);
}

export function withFlash(path: string, flashId: string): string {
  return `${path}${path.includes('?') ? '&' : '?'}flash=${encodeURIComponent(flashId)}`;
}

export function formText(value: unknown): string {
  return typeof value === 'string' ? value.trim() : '';
}
