import { createHash, randomBytes } from 'node:crypto';
import type { WebSessionStore } from '../../store/ports/server/web-session-store.ts';
import type { ApproverDirectory } from './approver-tokens.ts';
import type { Identity } from './identity.ts';

export interface WebSession {
  /** The cookie value. Only its SHA-256 is stored. */
  id: string;
  identity: Identity;
  /** Sent back with every state-changing form; a page on another site cannot read it. */
  csrf: string;
  expiresAt: number;
}

export interface WebSessions {
  create(identity: Identity): Promise<WebSession>;
  /**
   * The live session for a cookie value, its expiry slid forward, with the approver's roles
   * as configured now; null when unknown, over, or its approver is no longer configured.
   */
  get(id: string | undefined): Promise<WebSession | null>;
  destroy(id: string | undefined): Promise<void>;
}

/** The stored key of a cookie value: a copy of the table holds no cookie that signs anyone in. */
export function webSessionHash(id: string): string {
  return createHash('sha256').update(id, 'utf8').digest('hex');
}

/**
 * The CSRF token of a sign-in, derived from the cookie value (with its own label, so it is
 * never the stored hash): every instance computes the same one, nothing more is stored, and
 * it cannot be worked out from the database or without the cookie.
 */
function csrfOf(id: string): string {
  return createHash('sha256').update('countersign-csrf:', 'utf8').update(id, 'utf8').digest('base64url');
}

/**
 * The expiry is slid forward at most once a minute per sign-in: a page's requests read the
 * store, and only one of them a minute writes to it.
 */
const SLIDE_EVERY_MS = 60_000;

/** Cookie values we issue: 32 random bytes in base64url. Anything else is not looked up. */
const cookiePattern = /^[A-Za-z0-9_-]{43}$/;

/**
 * Inbox sign-ins kept in the store, so a restart keeps everyone signed in and every server
 * instance on the store honours the same cookie. The store holds the SHA-256 of the cookie
 * value and the approver's name; each request looks the name up in the current approver
 * configuration, so removing an approver or a role takes effect at once.
 */
export function createWebSessions(options: {
  store: WebSessionStore;
  approvers: ApproverDirectory;
  ttlMs: number;
  now?: () => number;
}): WebSessions {
  const { store, approvers, ttlMs } = options;
  const now = options.now ?? Date.now;
  return {
    async create(identity) {
      const id = randomBytes(32).toString('base64url');
      const at = now();
      const expiresAt = at + ttlMs;
      await store.createWebSession(
        {
          idHash: webSessionHash(id),
          approver: identity.name,
          createdAt: new Date(at).toISOString(),
          expiresAtMs: expiresAt,
        },
        at,
      );
      return { id, identity: { ...identity, via: 'cookie' }, csrf: csrfOf(id), expiresAt };
    },
    async get(id) {
      if (!id || !cookiePattern.test(id)) return null;
      const idHash = webSessionHash(id);
      const at = now();
      let record = await store.getWebSession(idHash, at);
      if (record === null) return null;
      const approver = approvers.byName(record.approver);
      if (approver === null) return null;
      if (record.expiresAtMs < at + ttlMs - SLIDE_EVERY_MS) {
        record = await store.touchWebSession(idHash, { nowMs: at, expiresAtMs: at + ttlMs });
        if (record === null) return null;
      }
      return {
        id,
        identity: { ...approver, via: 'cookie' },
        csrf: csrfOf(id),
        expiresAt: record.expiresAtMs,
      };
    },
    async destroy(id) {
      if (id) await store.deleteWebSession(webSessionHash(id));
    },
  };
}
