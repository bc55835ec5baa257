import type { ApprovalRequest } from '../../core/approval.ts';
import { type AuditEvent, auditLinkParts } from '../../core/audit.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import type { StoredMessage } from '../../core/messages.ts';
import { auditScope, sessionScope } from '../../crypto/scopes.ts';
import { assertWritable } from '../approval-rules.ts';
import type { PayloadCodec } from '../codec.ts';
import { approvalValues, decidedValues } from '../row-values.ts';
import {
  APPROVAL_COLUMNS,
  APPROVAL_PLACEHOLDERS,
  DECIDED_COLUMNS,
  DECIDED_PLACEHOLDERS,
  EXECUTION_COLUMNS,
  RULE_COLUMNS,
} from '../sql/columns.ts';
import type { Tables } from '../sql/tables.ts';
import { executionValues, ruleValues } from '../sql/values.ts';
import type { StandingRule } from '../store.ts';
import { approvalExists, executionExists, ruleExists } from '../store-errors.ts';
import type { Query } from './connection.ts';
import type { AuditGroup } from './group-commit.ts';
import { jsonParameter } from './json-parameter.ts';
import { isDivisionByZero } from './pg-errors.ts';

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
    assertWritable(request);
    // Encoding the parsed argsJson (not `args`) keeps its sorted key order: with the JSON
    // codec the column holds exactly the text that was shown and hashed.
    const inserted = await query(
      `INSERT INTO ${tables.approvals} (${APPROVAL_COLUMNS}, ${DECIDED_COLUMNS})
       VALUES (${APPROVAL_PLACEHOLDERS}, ${DECIDED_PLACEHOLDERS})
       ON CONFLICT (id) DO NOTHING RETURNING id`,
      [...approvalValues(codec, request), ...decidedValues(request)],
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

  /*
   * One statement links a whole batch: it locks the head, numbers the entries after it and
   * hashes each onto the one before (SHA-256 over the text auditLinkParts leaves open at the
   * seq: the same link auditHash computes, so verifyAuditChain checks it as any other), then
   * inserts them and moves the head. The head's lock is taken and released within the
   * statement and its COMMIT, so no other process ever waits on a round trip of this one.
   */
  const linkSql = `WITH RECURSIVE
       head AS (SELECT seq, encode(hash, 'hex') AS hash FROM ${tables.auditHead} FOR UPDATE),
       input AS (
         SELECT * FROM json_to_recordset($1::json) AS u(n bigint, at text, kind text, session text,
           request_id text, actor text, data text, data_hash text, before text, after text)
       ),
       chain (n, seq, prev, hash) AS (
         SELECT 0::bigint, seq, NULL::text, hash FROM head
         UNION ALL
         SELECT c.n + 1, c.seq + 1, c.hash,
                encode(sha256(convert_to(c.hash || E'\\n' || i.before || (c.seq + 1)::text || i.after, 'UTF8')), 'hex')
         FROM chain c JOIN input i ON i.n = c.n + 1
       ),
       added AS (
         INSERT INTO ${tables.audit} (seq, at, kind, session, request_id, actor, data, prev_hash, hash, data_hash)
         SELECT c.seq, i.at, i.kind, i.session, i.request_id, i.actor, i.data,
                decode(c.prev, 'hex'), decode(c.hash, 'hex'), decode(i.data_hash, 'hex')
         FROM chain c JOIN input i ON i.n = c.n
       ),
       tail AS (SELECT seq, hash FROM chain ORDER BY n DESC LIMIT 1),
       moved AS (
         UPDATE ${tables.auditHead} SET seq = tail.seq, hash = decode(tail.hash, 'hex') FROM tail RETURNING 1
       )
     SELECT 1 / (SELECT count(*) FROM moved)::int AS moved`;

  /**
   * Links each group's events onto the chain, in order, in one statement (linkSql). Must be
   * the last write of its transaction: the head row's lock is held until COMMIT, and every
   * audit-writing transaction in every process queues on it. A group commit (group-commit.ts)
   * links all its writes' events here at once, for the whole batch, and passes `closing`: the
   * statement then carries the transaction's COMMIT behind it on the wire
   * (QueryOptions.last), so the lock is held for no round trip at all.
   */
  async function linkAudit(query: Query, groups: readonly AuditGroup[], closing = false) {
    const stamped = groups.flatMap((group) => group.events.map((event) => ({ event, at: group.at })));
    if (stamped.length === 0) return;
    const parts = stamped.map(({ event, at }) => auditLinkParts({ ...event, at }));
    try {
      const rows = stamped.map(({ event, at }, i) => ({
        n: i + 1,
        at,
        kind: event.kind,
        session: event.session ?? null,
        request_id: event.requestId ?? null,
        actor: event.actor ?? null,
        data: codec.encode(event.data, auditScope(event)),
        data_hash: parts[i]!.dataHash,
        before: parts[i]!.before,
        after: parts[i]!.after,
      }));
      await query(linkSql, [jsonParameter(rows)], { last: closing });
    } catch (error) {
      // No head row moved: the statement divides by zero rather than commit the batch without
      // its entries (when closing, the COMMIT is already on its way).
      if (isDivisionByZero(error)) throw new Error(`${tables.auditHead} has no row; the schema is damaged`);
      throw error;
    }
  }

  /** Links `events`, all stamped `at`; see linkAudit. */
  async function appendAudit(query: Query, events: readonly AuditEvent[] | undefined, at: string) {
    if (events === undefined || events.length === 0) return;
    await linkAudit(query, [{ events, at }]);
  }

  return { insertMessages, insertApproval, insertExecution, insertRule, appendAudit, linkAudit };
}
