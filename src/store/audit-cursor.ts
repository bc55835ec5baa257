import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import type { AuditQuery } from './ports/audit-log.ts';

/** A cursor read with its parts checked: a nonsensical cursor is a caller's bug, refused, not clamped. */
export interface AuditCursor {
  session: string | undefined;
  afterSeq: number;
  /** null: no cap. */
  limit: number | null;
}

export function auditCursor(query: AuditQuery = {}): AuditCursor {
  const afterSeq = query.afterSeq ?? 0;
  if (!Number.isSafeInteger(afterSeq) || afterSeq < 0)
    throw new InvalidInputError(`listAudit: afterSeq must be a whole number >= 0, not ${afterSeq}.`);
  const limit = query.limit ?? null;
  if (limit !== null && (!Number.isSafeInteger(limit) || limit < 1))
    throw new InvalidInputError(`listAudit: limit must be a whole number >= 1, not ${limit}.`);
  return { session: query.session, afterSeq, limit };
}

/**
 * The SELECT both SQL backends run, in their own parameter syntax. `seq > $after ORDER BY
 * seq LIMIT $limit` is a range walk of the primary key that stops at the limit; with a
 * session, the session index is probed instead (SQLite's carries seq, the rowid, so it is
 * walked in order too). Two texts rather than `($session IS NULL OR …)`, which would keep
 * either plan from being chosen.
 */
export function auditCursorSql(
  table: string,
  columns: string,
  bySession: boolean,
  p: { session: string; afterSeq: string; limit: string },
): string {
  const session = bySession ? ` AND session = ${p.session}` : '';
  return `SELECT ${columns} FROM ${table} WHERE seq > ${p.afterSeq}${session} ORDER BY seq LIMIT ${p.limit}`;
}
