import { randomBytes } from 'node:crypto';
import type { Identity } from './identity.ts';

export interface WebSession {
  id: string;
  identity: Identity;
  /** Sent back with every state-changing form; a page on another site cannot read it. */
  csrf: string;
  expiresAt: number;
}

export interface WebSessions {
  create(identity: Identity): WebSession;
  /** The live session for a cookie value, its expiry slid forward; null when unknown or over. */
  get(id: string | undefined): WebSession | null;
  destroy(id: string | undefined): void;
}

/**
 * Inbox sign-ins, kept in this process's memory: a restart signs everyone out, and two
 * server instances behind one address need sticky routing or the identity header instead.
 */
export function createWebSessions(options: { ttlMs: number; now?: () => number }): WebSessions {
  const now = options.now ?? Date.now;
  const sessions = new Map<string, WebSession>();
  const sweep = () => {
    const at = now();
    for (const [id, session] of sessions) if (session.expiresAt <= at) sessions.delete(id);
  };
  return {
    create(identity) {
      if (sessions.size > 1000) sweep();
      const session: WebSession = {
        id: randomBytes(32).toString('base64url'),
        identity: { ...identity, via: 'cookie' },
        csrf: randomBytes(32).toString('base64url'),
        expiresAt: now() + options.ttlMs,
      };
      sessions.set(session.id, session);
      return session;
    },
    get(id) {
      if (!id) return null;
      const session = sessions.get(id);
      if (!session) return null;
      if (session.expiresAt <= now()) {
        sessions.delete(id);
        return null;
      }
      session.expiresAt = now() + options.ttlMs;
      return session;
    },
    destroy(id) {
      if (id) sessions.delete(id);
    },
  };
}
