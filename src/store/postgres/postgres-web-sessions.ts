import type { WebSessionStore } from '../ports/server/web-session-store.ts';
import { WEB_SESSION_COLUMNS } from '../sql/columns.ts';
import { toWebSession } from '../sql/rows.ts';
import type { Tables } from '../sql/tables.ts';
import type { Query } from './connection.ts';
import { first } from './row-queries.ts';

/** The `web_sessions` table: inbox sign-ins in the schema (a server port, not part of Store). */
export function createPostgresWebSessions(query: Query, t: Tables): WebSessionStore {
  return {
    async createWebSession(session, nowMs) {
      // One statement: the prune and the insert commit together, with no BEGIN/COMMIT.
      await query(
        `WITH pruned AS (DELETE FROM ${t.webSessions} WHERE expires_at <= $5::bigint)
         INSERT INTO ${t.webSessions} (${WEB_SESSION_COLUMNS}) VALUES ($1, $2, $3, $4::bigint)
         ON CONFLICT (id_hash) DO UPDATE SET approver = excluded.approver,
           created_at = excluded.created_at, expires_at = excluded.expires_at`,
        [session.idHash, session.approver, session.createdAt, session.expiresAtMs, nowMs],
      );
    },

    async getWebSession(idHash, nowMs) {
      const row = first(
        await query(
          `SELECT ${WEB_SESSION_COLUMNS} FROM ${t.webSessions} WHERE id_hash = $1 AND expires_at > $2::bigint`,
          [idHash, nowMs],
        ),
      );
      return row === undefined ? null : toWebSession(row);
    },

    async touchWebSession(idHash, update) {
      const row = first(
        await query(
          `UPDATE ${t.webSessions} SET expires_at = GREATEST(expires_at, $2::bigint)
           WHERE id_hash = $1 AND expires_at > $3::bigint RETURNING ${WEB_SESSION_COLUMNS}`,
          [idHash, update.expiresAtMs, update.nowMs],
        ),
      );
      return row === undefined ? null : toWebSession(row);
    },

    async deleteWebSession(idHash) {
      const rows = await query(`DELETE FROM ${t.webSessions} WHERE id_hash = $1 RETURNING 1 AS ok`, [idHash]);
      return rows.length > 0;
    },
  };
}
