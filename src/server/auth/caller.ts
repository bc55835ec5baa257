import { createHmac, timingSafeEqual } from 'node:crypto';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import { userIdPattern } from '../../core/ids.ts';
import { resolveClientAddress, type TrustedProxies } from '../http/client-address.ts';
import { ServerError } from '../http/server-error.ts';
import type { ApproverDirectory } from './approver-tokens.ts';
import type { Identity } from './identity.ts';
import type { RateLimiter } from './rate-limiter.ts';
import type { WebSession, WebSessions } from './web-sessions.ts';

export const SESSION_COOKIE = 'countersign_session';

export interface AuthConfig {
  approvers: ApproverDirectory;
  /** Set only when a trusted reverse proxy puts the signed-in user's name in this header. */
  identityHeader: string | undefined;
  /** With the identity header: the proxy's comma-separated roles (groups) of that user. */
  rolesHeader: string | undefined;
  webSessions: WebSessions;
  limiter: RateLimiter;
  /** Reverse proxies whose X-Forwarded-For names the client (COUNTERSIGN_TRUST_PROXY). */
  trustedProxies: TrustedProxies;
  /** Keys the CSRF tokens of proxy-authenticated users, who have no server-side session. */
  csrfSecret: Uint8Array;
}

export interface Caller {
  identity: Identity;
  /** The token state-changing inbox forms must carry; null for API token callers. */
  csrf: string | null;
  webSession: WebSession | null;
}

/**
 * The client's address, for rate limiting: the connection's peer, or behind a trusted proxy
 * the address it forwarded. Requests made in-process have none.
 */
export function clientAddress(c: Context, trusted: TrustedProxies): string {
  let peer: string | undefined;
  try {
    peer = getConnInfo(c).remote.address;
  } catch {
    return 'unknown';
  }
  return resolveClientAddress(peer, c.req.header('x-forwarded-for'), trusted);
}

/** 401 for a wrong token, or 429 once the address (or everyone) failed too often. */
export function refuseWrongToken(c: Context, config: AuthConfig): ServerError {
  const address = clientAddress(c, config.trustedProxies);
  const wait = config.limiter.blockedFor(address);
  if (wait > 0)
    return new ServerError('RATE_LIMITED', 'Too many failed sign-in attempts. Try again later.', {
      retryAfter: wait,
    });
  config.limiter.fail(address);
  return new ServerError('UNAUTHENTICATED', 'The bearer token is not valid.');
}

/**
 * Establishes who is calling: a bearer token, the trusted proxy's identity header, or an
 * inbox sign-in cookie, in that order. A wrong token is an error (and counts towards the
 * rate limit); no credentials at all is `null`, which each route turns into 401 or a sign-in.
 */
export async function resolveCaller(c: Context, config: AuthConfig): Promise<Caller | null> {
  const authorization = c.req.header('authorization');
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    // The token is checked first: a correct one always works, whoever failed from this address.
    const identity = match?.[1] ? config.approvers.authenticate(match[1]) : null;
    if (!identity) throw refuseWrongToken(c, config);
    return { identity, csrf: null, webSession: null };
  }
  if (config.identityHeader) {
    const name = c.req.header(config.identityHeader)?.trim();
    if (name) {
      if (!userIdPattern.test(name))
        throw new ServerError(
          'UNAUTHENTICATED',
          `The ${config.identityHeader} header does not hold a valid name.`,
        );
      const roles = config.rolesHeader
        ? (c.req.header(config.rolesHeader) ?? '')
            .split(',')
            .map((role) => role.trim())
            .filter(Boolean)
        : [];
      return {
        identity: { name, roles, via: 'header' },
        csrf: hmacCsrf(config.csrfSecret, name),
        webSession: null,
      };
    }
  }
  const session = await config.webSessions.get(getCookie(c, SESSION_COOKIE));
  if (session) return { identity: session.identity, csrf: session.csrf, webSession: session };
  return null;
}

function hmacCsrf(secret: Uint8Array, name: string): string {
  return createHmac('sha256', secret).update(`csrf:${name}`).digest('base64url');
}

export function csrfMatches(expected: string | null, sent: unknown): boolean {
  if (expected === null || typeof sent !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(sent);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * A state-changing browser request must come from our own pages: an Origin or
 * Sec-Fetch-Site naming another site is refused even before the CSRF token is checked.
 */
export function sameOrigin(c: Context, publicOrigin: string | undefined): boolean {
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
  const origin = c.req.header('origin');
  if (origin === undefined) return true;
  if (publicOrigin !== undefined) return origin === publicOrigin;
  // Hosts, not schemes: behind a TLS-terminating proxy our own URL says http.
  try {
    return new URL(origin).host === new URL(c.req.url).host;
  } catch {
    return false;
  }
}
