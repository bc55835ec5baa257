import type { ApprovalRequest } from '../../core/approval.ts';
import type { AuditEntry } from '../../core/audit.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import type { StoredMessage } from '../../core/messages.ts';
import type { SessionRecord } from '../../core/session.ts';
import { type AuditCursor, auditCursorSql } from '../audit-cursor.ts';
import type { PayloadCodec } from '../codec.ts';
import {
  APPROVAL_COLUMNS,
  AUDIT_COLUMNS,
  EXECUTION_COLUMNS,
  RULE_COLUMNS,
  SESSION_COLUMNS,
} from '../sql/columns.ts';
import { toApproval, toAuditEntry, toExecution, toMessages, toRule, toSession } from '../sql/rows.ts';
import type { Tables } from '../sql/tables.ts';
import { DEFAULT_STALLED_LIMIT, stalledSessionsSql, toStalledSession } from '../stalled-sessions.ts';
import type { StalledSession, StalledSessionQuery, StandingRule } from '../store.ts';
import type { Query, Row } from './connection.ts';

export type Conditions = ReadonlyArray<readonly [column: string, value: string | undefined]>;

/** Equality filters on optional values, as a WHERE clause with numbered parameters. */
function whereClause(conditions: Conditions): { clause: string; values: string[] } {
  const used = conditions.filter((entry): entry is readonly [string, string] => entry[1] !== undefined);
  return {
    clause:
      used.length === 0 ? '' : ` WHERE ${used.map(([column], i) => `${column} = $${i + 1}`).join(' AND ')}`,
    values: used.map(([, value]) => value),
  };
}

/** Exported so a test can ask PostgreSQL for the plan: an index range walk on seq (or session), no scan. */
export function auditPageText(tables: Tables, bySession: boolean): string {
  return auditCursorSql(tables.audit, AUDIT_COLUMNS, bySession, {
    afterSeq: '$1::bigint',
    limit: '$2::integer',
    session: '$3::text',
  });
}

/** Exported so a test can ask PostgreSQL for its plan: it must be able to use the partial index. */
export function stalledSessionsText(tables: Tables): string {
  return stalledSessionsSql(tables, {
    includeHeld: '$1::boolean',
    nowMs: '$2::bigint',
    agentIn: '($3::text[] IS NULL OR s.agent = ANY($3::text[]))',
    limit: '$4::integer',
  });
}

export const first = (rows: Row[]): Row | undefined => rows[0];

/**
 * The SELECTs used on their own and inside transactions: each takes the `Query` to run on,
 * the pool's or the transaction's.
 */
export function createRowQueries(tables: Tables, codec: PayloadCodec) {
  async function sessionById(q: Query, id: string): Promise<SessionRecord | null> {
    const row = first(await q(`SELECT ${SESSION_COLUMNS} FROM ${tables.sessions} WHERE id = $1`, [id]));
    return row === undefined ? null : toSession(codec, row);
  }

  async function listSessions(q: Query): Promise<SessionRecord[]> {
    const rows = await q(`SELECT ${SESSION_COLUMNS} FROM ${tables.sessions} ORDER BY created_at, id`);
    return rows.map((row) => toSession(codec, row));
  }

  async function messagesOf(q: Query, session: string): Promise<StoredMessage[]> {
    const rows = await q(`SELECT seq, at, body FROM ${tables.messages} WHERE session = $1 ORDER BY seq`, [
      session,
    ]);
    return toMessages(codec, rows, session);
  }

  async function approvalById(q: Query, id: string): Promise<ApprovalRequest | null> {
    const row = first(await q(`SELECT ${APPROVAL_COLUMNS} FROM ${tables.approvals} WHERE id = $1`, [id]));
    return row === undefined ? null : toApproval(codec, row);
  }

  async function approvalsWhere(q: Query, conditions: Conditions): Promise<ApprovalRequest[]> {
    const { clause, values } = whereClause(conditions);
    const rows = await q(
      `SELECT ${APPROVAL_COLUMNS} FROM ${tables.approvals}${clause} ORDER BY created_at, id`,
      values,
    );
    return rows.map((row) => toApproval(codec, row));
  }

  async function executionById(q: Query, requestId: string): Promise<ExecutionRecord | null> {
    const row = first(
      await q(`SELECT ${EXECUTION_COLUMNS} FROM ${tables.executions} WHERE request_id = $1`, [requestId]),
    );
    return row === undefined ? null : toExecution(codec, row);
  }

  async function executionsWhere(q: Query, conditions: Conditions): Promise<ExecutionRecord[]> {
    const { clause, values } = whereClause(conditions);
    const rows = await q(
      `SELECT ${EXECUTION_COLUMNS} FROM ${tables.executions}${clause} ORDER BY started_at, request_id`,
      values,
    );
    return rows.map((row) => toExecution(codec, row));
  }

  async function ruleById(q: Query, id: string): Promise<StandingRule | null> {
    const row = first(await q(`SELECT ${RULE_COLUMNS} FROM ${tables.rules} WHERE id = $1`, [id]));
    return row === undefined ? null : toRule(row);
  }

  async function rulesOf(
    q: Query,
    filter: { session?: string; includeRevoked?: boolean },
  ): Promise<StandingRule[]> {
    const where: string[] = [];
    const values: string[] = [];
    if (filter.session !== undefined) {
      values.push(filter.session);
      where.push(`session = $${values.length}`);
    }
    if (filter.includeRevoked !== true) where.push('revoked_at IS NULL');
    const clause = where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`;
    const rows = await q(
      `SELECT ${RULE_COLUMNS} FROM ${tables.rules}${clause} ORDER BY created_at, id`,
      values,
    );
    return rows.map((row) => toRule(row));
  }

  const auditPage = auditPageText(tables, false);
  const auditSessionPage = auditPageText(tables, true);

  async function auditOf(q: Query, cursor: AuditCursor): Promise<AuditEntry[]> {
    // LIMIT NULL is LIMIT ALL.
    const rows =
      cursor.session === undefined
        ? await q(auditPage, [cursor.afterSeq, cursor.limit])
        : await q(auditSessionPage, [cursor.afterSeq, cursor.limit, cursor.session]);
    return rows.map((row) => toAuditEntry(codec, row));
  }

  const stalledText = stalledSessionsText(tables);

  async function stalledSessions(q: Query, query: StalledSessionQuery): Promise<StalledSession[]> {
    const rows = await q(stalledText, [
      query.includeHeld === true,
      query.nowMs,
      query.agents === undefined ? null : [...query.agents],
      query.limit ?? DEFAULT_STALLED_LIMIT,
    ]);
    return rows.map(toStalledSession);
  }

  return {
    auditOf,
    sessionById,
    listSessions,
    messagesOf,
    approvalById,
    approvalsWhere,
    executionById,
    executionsWhere,
    ruleById,
    rulesOf,
    stalledSessions,
  };
}
