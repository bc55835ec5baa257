import type { SQLInputValue } from 'node:sqlite';
import type { ApprovalRequest } from '../../core/approval.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import type { StoredMessage } from '../../core/messages.ts';
import type { SessionRecord } from '../../core/session.ts';
import type { PayloadCodec } from '../codec.ts';
import { APPROVAL_COLUMNS, EXECUTION_COLUMNS, RULE_COLUMNS, SESSION_COLUMNS } from '../sql/columns.ts';
import { type Row, toApproval, toExecution, toMessages, toRule, toSession } from '../sql/rows.ts';
import { DEFAULT_STALLED_LIMIT, stalledSessionsSql, toStalledSession } from '../stalled-sessions.ts';
import type { StalledSession, StalledSessionQuery, StandingRule } from '../store.ts';
import { sessionNotFound } from '../store-errors.ts';
import type { Sql } from './connection.ts';

/** Exported so a test can ask SQLite for its plan: it must walk the partial index. */
export const STALLED_SESSIONS_SQL = stalledSessionsSql(
  { sessions: 'sessions', approvals: 'approvals', executions: 'executions' },
  {
    includeHeld: '?1',
    nowMs: '?2',
    // The agent names arrive as one JSON array (or NULL for all), so the text stays one statement.
    agentIn: '(?3 IS NULL OR s.agent IN (SELECT value FROM json_each(?3)))',
    limit: '?4',
  },
);

export type Conditions = ReadonlyArray<readonly [column: string, value: string | undefined]>;

/** The SELECTs used both on their own and inside write transactions. */
export function createRowQueries(sql: Sql, codec: PayloadCodec) {
  function sessionById(id: string): SessionRecord | null {
    const row = sql(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = ?`).get(id);
    return row === undefined ? null : toSession(codec, row);
  }

  function requireSession(id: string): SessionRecord {
    const session = sessionById(id);
    if (session === null) throw sessionNotFound(id);
    return session;
  }

  function approvalById(id: string): ApprovalRequest | null {
    const row = sql(`SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE id = ?`).get(id);
    return row === undefined ? null : toApproval(codec, row);
  }

  function executionById(requestId: string): ExecutionRecord | null {
    const row = sql(`SELECT ${EXECUTION_COLUMNS} FROM executions WHERE request_id = ?`).get(requestId);
    return row === undefined ? null : toExecution(codec, row);
  }

  function ruleById(id: string): StandingRule | null {
    const row = sql(`SELECT ${RULE_COLUMNS} FROM rules WHERE id = ?`).get(id);
    return row === undefined ? null : toRule(row);
  }

  function rulesOf(filter: { session?: string; includeRevoked?: boolean }): StandingRule[] {
    const where: string[] = [];
    const values: SQLInputValue[] = [];
    if (filter.session !== undefined) {
      where.push('session = ?');
      values.push(filter.session);
    }
    if (filter.includeRevoked !== true) where.push('revoked_at IS NULL');
    const clause = where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`;
    return sql(`SELECT ${RULE_COLUMNS} FROM rules${clause} ORDER BY created_at, id`)
      .all(...values)
      .map(toRule);
  }

  function messagesOf(session: string): StoredMessage[] {
    return toMessages(
      codec,
      sql('SELECT seq, at, body FROM messages WHERE session = ? ORDER BY seq').all(session),
      session,
    );
  }

  /** Equality filters on optional values; each combination is its own cached statement. */
  function filtered(columns: string, table: string, conditions: Conditions, order: string): Row[] {
    const used = conditions.filter((entry): entry is readonly [string, string] => entry[1] !== undefined);
    const where = used.length === 0 ? '' : ` WHERE ${used.map(([column]) => `${column} = ?`).join(' AND ')}`;
    const values: SQLInputValue[] = used.map(([, value]) => value);
    return sql(`SELECT ${columns} FROM ${table}${where} ORDER BY ${order}`).all(...values);
  }

  function stalledSessions(query: StalledSessionQuery): StalledSession[] {
    return sql(STALLED_SESSIONS_SQL)
      .all(
        query.includeHeld === true ? 1 : 0,
        query.nowMs,
        query.agents === undefined ? null : JSON.stringify(query.agents),
        query.limit ?? DEFAULT_STALLED_LIMIT,
      )
      .map(toStalledSession);
  }

  return {
    sessionById,
    requireSession,
    approvalById,
    executionById,
    ruleById,
    rulesOf,
    messagesOf,
    filtered,
    stalledSessions,
  };
}
