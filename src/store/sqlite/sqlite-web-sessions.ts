import type { WebSessionStore } from '../ports/server/web-session-store.ts';
import { WEB_SESSION_COLUMNS } from '../sql/columns.ts';
import { toWebSession } from '../sql/rows.ts';
import type { Connection } from './connection.ts';

/** The `web_sessions` table: inbox sign-ins on the SQLite file (a server port, not part of Store). */
export function createSqliteWebSessions(
  connection: Pick<Connection, 'sql' | 'run' | 'write'>,
): WebSessionStore {
  const { sql, run, write } = connection;
  return {
    async createWebSession(session, nowMs) {
      await write(() => {
        sql('DELETE FROM web_sessions WHERE expires_at <= ?').run(nowMs);
        sql(
          `INSERT INTO web_sessions (${WEB_SESSION_COLUMNS}) VALUES (?, ?, ?, ?)
           ON CONFLICT (id_hash) DO UPDATE SET approver = excluded.approver,
             created_at = excluded.created_at, expires_at = excluded.expires_at`,
        ).run(session.idHash, session.approver, session.createdAt, session.expiresAtMs);
      });
    },

    async getWebSession(idHash, nowMs) {
      return run(() => {
        const row = sql(
          `SELECT ${WEB_SESSION_COLUMNS} FROM web_sessions WHERE id_hash = ? AND expires_at > ?`,
        ).get(idHash, nowMs);
        return row === undefined ? null : toWebSession(row);
      });
    },

    async touchWebSession(idHash, update) {
      return write(() => {
        const row = sql(
          `UPDATE web_sessions SET expires_at = MAX(expires_at, ?)
           WHERE id_hash = ? AND expires_at > ? RETURNING ${WEB_SESSION_COLUMNS}`,
        ).get(update.expiresAtMs, idHash, update.nowMs);
        return row === undefined ? null : toWebSession(row);
      });
    },

    async deleteWebSession(idHash) {
      return write(() => sql('DELETE FROM web_sessions WHERE id_hash = ?').run(idHash).changes > 0);
    },
  };
}
