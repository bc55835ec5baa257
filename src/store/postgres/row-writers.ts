import type { ApprovalRequest } from '../../core/approval.ts';
import { type AuditEvent, sealAuditEntry } from '../../core/audit.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import type { StoredMessage } from '../../core/messages.ts';
import { auditScope, sessionScope } from '../../crypto/scopes.ts';
import { assertArgsBound } from '../approval-rules.ts';
import type { PayloadCodec } from '../codec.ts';
import { approvalValues } from '../row-values.ts';
import { APPROVAL_COLUMNS, APPROVAL_PLACEHOLDERS, EXECUTION_COLUMNS, RULE_COLUMNS } from '../sql/columns.ts';
import { toAuditLink } from '../sql/rows.ts';
import type { Tables } from '../sql/tables.ts';
import { executionValues, ruleValues } from '../sql/values.ts';
import type { StandingRule } from '../store.ts';
import { approvalExists, executionExists, ruleExists } from '../store-errors.ts';
import type { Query } from './connection.ts';

/**
 * The INSERTs shared by the step commit, decisions, the ledger and import; callers own the
 * transaction. Ids already taken are found by `ON CONFLICT DO NOTHING RETURNING`, which also
 * settles two transactions inserting the same id at once (the second waits, then sees it).
 */
export function createRowWriters(tables: Tables, codec: PayloadCodec) {
  async function insertMessages(query: Query, session: string, messages: readonly StoredMessage[]) {
    if (messages.length === 0) return;
    await query(
      `INSERT INTO ${tables.messages} (session, seq, at, body)
       SELECT $1, u.seq, u.at, u.body FROM unnest($2::integer[], $3::text[], $4::text[]) AS u(seq, at, body)`,
      [
        session,
        messages.map((message) => message.seq),
        messages.map((message) => message.at),
        messages.map((message) => codec.encode(message.message, sessionScope(session))),
      ],
    );
  }

  async function insertApproval(query: Query, request: ApprovalRequest): Promise<void> {
    assertArgsBound(request);
    // Encoding the parsed argsJson (not `args`) keeps its sorted key order: with the JSON
    // codec the column holds exactly the text that was shown and hashed.
    const inserted = await query(
      `INSERT INTO ${tables.approvals} (${APPROVAL_COLUMNS})
       VALUES (${APPROVAL_PLACEHOLDERS})
       ON CONFLICT (id) DO NOTHING RETURNING id`,
      approvalValues(codec, request),
    );
    if (inserted.length === 0) throw approvalExists(request.id);
  }

  async function insertExecution(query: Query, record: ExecutionRecord): Promise<void> {
    const inserted = await query(
      `INSERT INTO ${tables.executions} (${EXECUTION_COLUMNS})
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (request_id) DO NOTHING RETURNING request_id`,
      executionValues(codec, record),
    );
    if (inserted.length === 0) throw executionExists(record.requestId);
  }

  async function insertRule(query: Query, rule: StandingRule): Promise<void> {
    const inserted = await query(
      `INSERT INTO ${tables.rules} (${RULE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (id) DO NOTHING RETURNING id`,
      ruleValues(rule),
    );
    if (inserted.length === 0) throw ruleExists(rule.id);
  }

  /**
   * Links `events` onto the chain. Must be the last write of its transaction: the head row's
   * lock is held until COMMIT, and every audit-writing transaction in every process queues on
   * it, so the shorter the time from here to COMMIT, the more of them fit in a second.
   */
  async function appendAudit(query: Query, events: readonly AuditEvent[] | undefined, at: string) {
    if (events === undefined || events.length === 0) return;
    // FOR UPDATE waits for the current holder and then reads the row as it committed, so
    // locking and reading the tail is one round trip (a separate advisory lock would be two).
    const head = await query(`SELECT seq, hash FROM ${tables.auditHead} FOR UPDATE`);
    if (head[0] === undefined) throw new Error(`${tables.auditHead} has no row; the schema is damaged`);
    let { seq, hash: prevHash } = toAuditLink(head[0], 'audit_head');
    const rows = events.map((event) => {
      seq += 1;
      const { dataHash, hash } = sealAuditEntry(prevHash, { ...event, seq, at });
      const row = { seq, event, prevHash, hash, dataHash };
      prevHash = hash;
      return row;
    });
    await query(
      `WITH added AS (
         INSERT INTO ${tables.audit} (seq, at, kind, session, request_id, actor, data, prev_hash, hash, data_hash)
         SELECT u.seq, $1, u.kind, u.session, u.request_id, u.actor, u.data,
                decode(u.prev_hash, 'hex'), decode(u.hash, 'hex'), decode(u.data_hash, 'hex')
         FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $12::text[])
           AS u(seq, kind, session, request_id, actor, data, prev_hash, hash, data_hash)
       )
       UPDATE ${tables.auditHead} SET seq = $10, hash = decode($11, 'hex')`,
      [
        at,
        rows.map((row) => row.seq),
        rows.map((row) => row.event.kind),
        rows.map((row) => row.event.session),
        rows.map((row) => row.event.requestId),
        rows.map((row) => row.event.actor),
        rows.map((row) => codec.encode(row.event.data, auditScope(row.event))),
        rows.map((row) => row.prevHash),
        rows.map((row) => row.hash),
        seq,
        prevHash,
        rows.map((row) => row.dataHash),
      ],
    );
  }

  return { insertMessages, insertApproval, insertExecution, insertRule, appendAudit };
}
