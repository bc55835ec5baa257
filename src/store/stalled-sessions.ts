import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { int, type Row, text, textOrNull } from './row-readers.ts';
import type { StalledSession, StalledSessionQuery } from './store.ts';

/** The cap when a query names none; the guard (guard.ts) fills it in and checks a given one. */
export const DEFAULT_STALLED_LIMIT = 100;

/**
 * The row cap every store applies (checked once, by the guard), so a sweep's work per pass is
 * bounded the same way whatever the store; a nonsensical limit is a caller's bug, refused
 * rather than clamped.
 */
export function stalledLimit(query: StalledSessionQuery): number {
  const limit = query.limit ?? DEFAULT_STALLED_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) {
    throw new InvalidInputError(`listStalledSessions: limit must be a whole number >= 1, not ${limit}.`);
  }
  return limit;
}

/**
 * The query both SQL backends run, with their own table names and parameter syntax.
 * `continue_due IS NOT NULL` and the ORDER BY match the partial index `sessions_continue_due`
 * (the paging migration): it holds only sessions whose open batch has no pending request left,
 * so the walk covers the sessions due for continuing, not every session waiting for a person,
 * and stops at the limit; each candidate costs two index probes (`approvals_by_session`,
 * `executions_unknown`), kept as the definition, the flag being what finds them. The
 * include-held flag and the agent filter are parameters, so each backend prepares one text.
 */
export function stalledSessionsSql(
  tables: { sessions: string; approvals: string; executions: string },
  sql: { includeHeld: string; nowMs: string; agentIn: string; limit: string },
): string {
  return `SELECT s.id, s.agent, s.updated_at, s.lease_owner, s.lease_until
    FROM ${tables.sessions} s
    WHERE s.continue_due IS NOT NULL AND s.batch IS NOT NULL
      AND (${sql.includeHeld} OR s.lease_owner IS NULL OR s.lease_until < ${sql.nowMs})
      AND ${sql.agentIn}
      AND NOT EXISTS (SELECT 1 FROM ${tables.approvals} a WHERE a.session = s.id AND a.status = 'pending')
      AND NOT EXISTS (SELECT 1 FROM ${tables.executions} e WHERE e.session = s.id AND e.status = 'unknown')
    ORDER BY s.updated_at, s.id
    LIMIT ${sql.limit}`;
}

export function toStalledSession(row: Row): StalledSession {
  const where = `sessions(id=${String(row.id)})`;
  return {
    id: text(row, 'id', where),
    agent: text(row, 'agent', where),
    updatedAt: text(row, 'updated_at', where),
    lease: { owner: textOrNull(row, 'lease_owner', where), untilMs: int(row, 'lease_until', where) },
  };
}
