import type { ApprovalRequest } from '../../core/approval.ts';
import type { AuditEvent } from '../../core/audit.ts';
import { nextNudgeAt } from '../../core/nudges.ts';
import type { PayloadCodec } from '../codec.ts';
import type { RequestTimers } from '../ports/request-timers.ts';
import { APPROVAL_COLUMNS } from '../sql/columns.ts';
import { dueWorkOf, dueWorkSql } from '../sql/due-work.ts';
import { NUDGE_TIME_COLUMNS, nudgeTimeChange } from '../sql/nudge-time.ts';
import { toApproval } from '../sql/rows.ts';
import type { Tables } from '../sql/tables.ts';
import type { Connection } from './connection.ts';
import { type GroupCommit, oneStatement } from './group-commit.ts';

/** Exported so a test can ask PostgreSQL for its plan: it must use the partial index `approvals_nudge_due`. */
export function nudgesDueSql(t: Pick<Tables, 'approvals'>, ofKind: boolean): string {
  return `SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals}
    WHERE status = 'pending' AND next_nudge_at IS NOT NULL AND next_nudge_at <= $1${ofKind ? ' AND kind = $3' : ''}
    ORDER BY next_nudge_at, id LIMIT $2`;
}

/**
 * RequestTimers on PostgreSQL. Each change is one conditional UPDATE (the compare-and-set);
 * with audit entries it is a write of the store's group commit (group-commit.ts), which links
 * them last and commits. Under READ COMMITTED a
 * second instance updating the same row waits for the first, then re-checks the WHERE
 * against the committed row, finds the next nudge time moved on, and writes nothing.
 */
export function createPostgresRequestTimers(
  connection: Pick<Connection, 'query' | 'transaction'>,
  t: Pick<Tables, 'approvals' | 'sessions'>,
  codec: PayloadCodec,
  group: Pick<GroupCommit, 'run'>,
): RequestTimers {
  const { query } = connection;
  const byId = async (id: string): Promise<ApprovalRequest | null> => {
    const row = (await query(`SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals} WHERE id = $1`, [id]))[0];
    return row === undefined ? null : toApproval(codec, row);
  };
  /** One statement when there is nothing to audit; else the statement and the link in one transaction. */
  const casWithAudit = (text: string, values: unknown[], audit: AuditEvent[] | undefined, at: string) =>
    group.run(async (q, link) => {
      const row = (await q(text, values))[0];
      if (row === undefined) return null;
      link(audit, at);
      return toApproval(codec, row);
    }, oneStatement(audit));

  const dueWork = dueWorkSql(t);

  return {
    async dueWork(at) {
      const row = (await query(dueWork, []))[0] as {
        expiry_at: string | null;
        nudge_at: string | null;
        stalled: boolean;
      };
      return dueWorkOf(at, row.expiry_at, row.nudge_at, row.stalled === true);
    },

    async listNudgesDue(due) {
      const rows = await query(nudgesDueSql(t, due.kind !== undefined), [
        due.at,
        due.limit,
        ...(due.kind === undefined ? [] : [due.kind]),
      ]);
      return rows.map((row) => toApproval(codec, row));
    },

    async advanceNudge(id, advance, audit) {
      const expected = nextNudgeAt(advance.from);
      if (expected === null) return null;
      return casWithAudit(
        `UPDATE ${t.approvals} SET nudges = $2, next_nudge_at = $3, escalated_to = COALESCE($4, escalated_to)
         WHERE id = $1 AND status = 'pending' AND next_nudge_at = $5 RETURNING ${APPROVAL_COLUMNS}`,
        [id, JSON.stringify(advance.to), nextNudgeAt(advance.to), advance.escalatedTo ?? null, expected],
        audit,
        advance.at,
      );
    },

    async alignNudgeTime(id) {
      // Locked: an advanceNudge on the row waits, and this reads the nudges it leaves.
      return connection.transaction(async (q) => {
        const row = (
          await q(
            `SELECT ${NUDGE_TIME_COLUMNS} FROM ${t.approvals} WHERE id = $1 AND status = 'pending' FOR UPDATE`,
            [id],
          )
        )[0];
        if (row === undefined) return null;
        const change = nudgeTimeChange(row, id);
        if (change !== null)
          await q(`UPDATE ${t.approvals} SET next_nudge_at = $2 WHERE id = $1`, [id, change.now]);
        return change;
      });
    },

    async changeClaim(id, change, audit) {
      // change.at and claim_until are on the server's clock, not the claimer's host's (claims.ts
      // reads it: storeNow), so a claim lapses at the same moment for every host.
      const won =
        change.claim === null
          ? await casWithAudit(
              `UPDATE ${t.approvals} SET claim_by = NULL, claim_until = NULL
               WHERE id = $1 AND status = 'pending' AND claim_by = $2 RETURNING ${APPROVAL_COLUMNS}`,
              [id, change.by],
              audit,
              change.at,
            )
          : await casWithAudit(
              `UPDATE ${t.approvals} SET claim_by = $2, claim_until = $3
               WHERE id = $1 AND status = 'pending' AND expires_at > $4
                 AND (claim_by IS NULL OR claim_until <= $4 OR claim_by = $5) RETURNING ${APPROVAL_COLUMNS}`,
              [id, change.claim.by, change.claim.until, change.at, change.by],
              audit,
              change.at,
            );
      return won === null ? { won: false, request: await byId(id) } : { won: true, request: won };
    },
  };
}
