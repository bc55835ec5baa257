import type { AuditEvent } from '../../core/audit.ts';
import { nextNudgeAt } from '../../core/nudges.ts';
import type { PayloadCodec } from '../codec.ts';
import type { RequestTimers } from '../ports/request-timers.ts';
import { APPROVAL_COLUMNS } from '../sql/columns.ts';
import { dueWorkOf, dueWorkSql } from '../sql/due-work.ts';
import { NUDGE_TIME_COLUMNS, nudgeTimeChange } from '../sql/nudge-time.ts';
import { toApproval } from '../sql/rows.ts';
import { tableNames } from '../sql/tables.ts';
import type { Connection } from './connection.ts';

/** Pending rows by next nudge time: a range of `approvals_nudge_due`, never every pending row. */
export const NUDGES_DUE_SQL = `SELECT ${APPROVAL_COLUMNS} FROM approvals INDEXED BY approvals_nudge_due
  WHERE status = 'pending' AND next_nudge_at IS NOT NULL AND next_nudge_at <= ? ORDER BY next_nudge_at, id LIMIT ?`;
const NUDGES_DUE_OF_KIND_SQL = `SELECT ${APPROVAL_COLUMNS} FROM approvals INDEXED BY approvals_nudge_due
  WHERE status = 'pending' AND next_nudge_at IS NOT NULL AND next_nudge_at <= ? AND kind = ?
  ORDER BY next_nudge_at, id LIMIT ?`;

/** The watcher's one question, each sub-query on its partial index. */
export const DUE_WORK_SQL = dueWorkSql(tableNames(), (index) => ` INDEXED BY ${index}`);

/**
 * RequestTimers on the SQLite file: each change is one conditional UPDATE (the compare-and-set)
 * with its audit rows in the same transaction, so of two processes that read the same due row
 * one writes the nudge and its entry and the other changes nothing.
 */
export function createSqliteRequestTimers(
  connection: Pick<Connection, 'sql' | 'run' | 'write'>,
  codec: PayloadCodec,
  appendAudit: (events: readonly AuditEvent[] | undefined, at: string) => void,
): RequestTimers {
  const { sql, run, write } = connection;
  const byId = (id: string) => {
    const row = sql(`SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE id = ?`).get(id);
    return row === undefined ? null : toApproval(codec, row);
  };
  return {
    async dueWork(at) {
      return run(() => {
        const row = sql(DUE_WORK_SQL).get() as {
          expiry_at: string | null;
          nudge_at: string | null;
          stalled: number;
        };
        return dueWorkOf(at, row.expiry_at, row.nudge_at, row.stalled === 1);
      });
    },

    async listNudgesDue(query) {
      return run(() =>
        (query.kind === undefined
          ? sql(NUDGES_DUE_SQL).all(query.at, query.limit)
          : sql(NUDGES_DUE_OF_KIND_SQL).all(query.at, query.kind, query.limit)
        ).map((row) => toApproval(codec, row)),
      );
    },

    async advanceNudge(id, advance, audit) {
      const expected = nextNudgeAt(advance.from);
      if (expected === null) return null;
      return write(() => {
        const row = sql(
          `UPDATE approvals SET nudges = ?, next_nudge_at = ?, escalated_to = COALESCE(?, escalated_to)
           WHERE id = ? AND status = 'pending' AND next_nudge_at = ? RETURNING ${APPROVAL_COLUMNS}`,
        ).get(JSON.stringify(advance.to), nextNudgeAt(advance.to), advance.escalatedTo ?? null, id, expected);
        if (row === undefined) return null;
        appendAudit(audit, advance.at);
        return toApproval(codec, row);
      });
    },

    async alignNudgeTime(id) {
      return write(() => {
        const row = sql(
          `SELECT ${NUDGE_TIME_COLUMNS} FROM approvals WHERE id = ? AND status = 'pending'`,
        ).get(id);
        if (row === undefined) return null;
        const change = nudgeTimeChange(row, id);
        if (change !== null) sql('UPDATE approvals SET next_nudge_at = ? WHERE id = ?').run(change.now, id);
        return change;
      });
    },

    async changeClaim(id, change, audit) {
      return write(() => {
        const row =
          change.claim === null
            ? sql(
                `UPDATE approvals SET claim_by = NULL, claim_until = NULL
                 WHERE id = ? AND status = 'pending' AND claim_by = ? RETURNING ${APPROVAL_COLUMNS}`,
              ).get(id, change.by)
            : sql(
                `UPDATE approvals SET claim_by = ?, claim_until = ?
                 WHERE id = ? AND status = 'pending' AND expires_at > ?
                   AND (claim_by IS NULL OR claim_until <= ? OR claim_by = ?) RETURNING ${APPROVAL_COLUMNS}`,
              ).get(change.claim.by, change.claim.until, id, change.at, change.at, change.by);
        if (row === undefined) return { won: false, request: byId(id) };
        appendAudit(audit, change.at);
        return { won: true, request: toApproval(codec, row) };
      });
    },
  };
}
