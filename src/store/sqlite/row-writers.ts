import type { ApprovalRequest } from '../../core/approval.ts';
import { AUDIT_GENESIS, type AuditEvent, sealAuditEntry } from '../../core/audit.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import type { StoredMessage } from '../../core/messages.ts';
import { auditScope, sessionScope } from '../../crypto/scopes.ts';
import { assertWritable } from '../approval-rules.ts';
import type { PayloadCodec } from '../codec.ts';
import { approvalValues, decidedValues } from '../row-values.ts';
import {
  APPROVAL_COLUMNS,
  AUDIT_INSERT_COLUMNS,
  DECIDED_COLUMNS,
  EXECUTION_COLUMNS,
  RULE_COLUMNS,
} from '../sql/columns.ts';
import { toAuditLink } from '../sql/rows.ts';
import { executionValues, ruleValues } from '../sql/values.ts';
import type { StandingRule } from '../store.ts';
import { approvalExists, ruleExists } from '../store-errors.ts';
import type { Sql } from './connection.ts';

const APPROVAL_PLACEHOLDERS = `${APPROVAL_COLUMNS}, ${DECIDED_COLUMNS}`
  .split(',')
  .map(() => '?')
  .join(', ');

/** The INSERTs shared by the step commit, the ledger and import; callers own the transaction. */
export function createRowWriters(sql: Sql, codec: PayloadCodec) {
  function insertMessages(session: string, messages: readonly StoredMessage[]): void {
    const insert = sql('INSERT INTO messages (session, seq, at, body) VALUES (?, ?, ?, ?)');
    for (const message of messages)
      insert.run(session, message.seq, message.at, codec.encode(message.message, sessionScope(session)));
  }

  function insertApproval(request: ApprovalRequest): void {
    assertWritable(request);
    if (sql('SELECT 1 FROM approvals WHERE id = ?').get(request.id) !== undefined) {
      throw approvalExists(request.id);
    }
    sql(
      `INSERT INTO approvals (${APPROVAL_COLUMNS}, ${DECIDED_COLUMNS}) VALUES (${APPROVAL_PLACEHOLDERS})`,
    ).run(...approvalValues(codec, request), ...decidedValues(request));
  }

  function insertExecution(record: ExecutionRecord): void {
    sql(`INSERT INTO executions (${EXECUTION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
      ...executionValues(codec, record),
    );
  }

  function insertRule(rule: StandingRule): void {
    // Checked rather than left to the primary key so both backends word the refusal alike.
    if (sql('SELECT 1 FROM rules WHERE id = ?').get(rule.id) !== undefined) throw ruleExists(rule.id);
    sql(`INSERT INTO rules (${RULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(...ruleValues(rule));
  }

  /** Must run inside a write transaction: there the chain's tail cannot move under us. */
  function appendAudit(events: readonly AuditEvent[] | undefined, at: string): void {
    if (events === undefined || events.length === 0) return;
    const tail = sql('SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1').get();
    let { seq, hash: prevHash } =
      tail === undefined
        ? { seq: 0, hash: AUDIT_GENESIS }
        : toAuditLink(tail, `audit(seq=${String(tail.seq)})`);
    const insert = sql(`INSERT INTO audit (${AUDIT_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    for (const event of events) {
      seq += 1;
      const { dataHash, hash } = sealAuditEntry(prevHash, { ...event, seq, at });
      insert.run(
        seq,
        at,
        event.kind,
        event.session,
        event.requestId,
        event.actor,
        codec.encode(event.data, auditScope(event)),
        Buffer.from(prevHash, 'hex'),
        Buffer.from(hash, 'hex'),
        Buffer.from(dataHash, 'hex'),
      );
      prevHash = hash;
    }
  }

  return { insertMessages, insertApproval, insertExecution, insertRule, appendAudit };
}
