import type { WebSessionRecord, WebSessionStore } from '../ports/server/web-session-store.ts';

/**
 * Process-local inbox sign-ins: what a server uses when its store keeps none. A restart signs
 * everyone out and another instance does not know the cookie; SQLite and PostgreSQL keep them.
 */
export function createMemoryWebSessionStore(): WebSessionStore {
  const webSessions = new Map<string, WebSessionRecord>();
  return {
    async createWebSession(session, nowMs) {
      for (const [hash, row] of webSessions) if (row.expiresAtMs <= nowMs) webSessions.delete(hash);
      webSessions.set(session.idHash, { ...session });
    },

    async getWebSession(idHash, nowMs) {
      const row = webSessions.get(idHash);
      return row === undefined || row.expiresAtMs <= nowMs ? null : { ...row };
    },

    async touchWebSession(idHash, update) {
      const row = webSessions.get(idHash);
      if (row === undefined || row.expiresAtMs <= update.nowMs) return null;
      row.expiresAtMs = Math.max(row.expiresAtMs, update.expiresAtMs);
      return { ...row };
    },

    async deleteWebSession(idHash) {
      return webSessions.delete(idHash);
    },
  };
}
