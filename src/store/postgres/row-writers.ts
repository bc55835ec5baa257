import type { ApprovalRequest } from '../../core/approval.ts';
import { type AuditEvent, sealAuditEntry } from '../../core/audit.ts';
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
import { toAuditLink } from '../sql/rows.ts';
import type { Tables } from '../sql/tables.ts';
import { executionValues, ruleValues } from '../sql/values.ts';
import type { StandingRule } from '../store.ts';
import { approvalExists, executionExists, ruleExists } from '../store-errors.ts';
import type { Query, Row } from './connection.ts';
import { type AuditGroup, AuditHeadMoved } from './group-commit.ts';
import { isDivisionByZero } from './pg-errors.ts';

/** Locked links in a row that found this process's own head before it guesses again. */
const GUESS_AFTER = 4;

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

  const insertAudit = `INSERT INTO ${tables.audit} (seq, at, kind, session, request_id, actor, data, prev_hash, hash, data_hash)
         SELECT u.seq, u.at, u.kind, u.session, u.request_id, u.actor, u.data,
                decode(u.prev_hash, 'hex'), decode(u.hash, 'hex'), decode(u.data_hash, 'hex')
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
           AS u(seq, at, kind, session, request_id, actor, data, prev_hash, hash, data_hash)`;
  // The head as this process last linked it: the guess that saves the head read (see linkAudit).
  let lastHead: { seq: number; hash: string } | null = null;
  // Links in a row whose guess held, or would have (a locked read found the head this process
  // left). It guesses only after GUESS_AFTER of them: a wrong guess costs a whole transaction
  // run again (linkAudit), a right one saves one round trip, so guessing pays only where it
  // almost always holds: one process alone, not processes taking turns. It starts there,
  // since one process alone is the common case.
  let streak = GUESS_AFTER;

  function chained(
    stamped: ReadonlyArray<{ event: AuditEvent; at: string }>,
    from: { seq: number; hash: string },
  ) {
    let { seq, hash: prevHash } = from;
    const rows = stamped.map(({ event, at }) => {
      seq += 1;
      const { dataHash, hash } = sealAuditEntry(prevHash, { ...event, seq, at });
      const row = { seq, at, event, prevHash, hash, dataHash };
      prevHash = hash;
      return row;
    });
    return {
      head: { seq, hash: prevHash },
      values: [
        rows.map((row) => row.seq),
        rows.map((row) => row.at),
        rows.map((row) => row.event.kind),
        rows.map((row) => row.event.session),
        rows.map((row) => row.event.requestId),
        rows.map((row) => row.event.actor),
        rows.map((row) => codec.encode(row.event.data, auditScope(row.event))),
        rows.map((row) => row.prevHash),
        rows.map((row) => row.hash),
        rows.map((row) => row.dataHash),
        seq,
        prevHash,
      ],
    };
  }

  /**
   * Links each group's events onto the chain, in order. Must be the last write of its
   * transaction: the head row's lock is held until COMMIT, and every audit-writing transaction
   * in every process queues on it, so the shorter the time from here to COMMIT, the more of
   * them fit in a second. A group commit (group-commit.ts) links all its writes' events here
   * at once, for the whole batch, and passes `closing`: its last statement then carries the
   * transaction's COMMIT behind it on the wire (QueryOptions.last), so the lock is held for no
   * round trip at all.
   *
   * First it guesses that the head is still the one this process last linked (true while no
   * other process writes audit events) and links onto it in one statement whose head UPDATE
   * only matches that seq and hash; under READ COMMITTED a concurrent linker makes it wait and
   * then re-check, so a wrong guess matches nothing and writes nothing. Then, or with no guess,
   * it reads the head FOR UPDATE and links onto what it read: two statements. After a wrong
   * guess it stops guessing until GUESS_AFTER locked reads in a row find the head it would have
   * guessed.
   *
   * When closing, a wrong guess cannot simply fall through to the locked read: the COMMIT
   * is already on its way. So the guessing statement fails instead (1 / 0 rows linked), the
   * transaction rolls back, and AuditHeadMoved tells the group commit to run it again, now
   * without a guess. One process alone almost never pays this; processes taking turns stop
   * guessing after the first miss and rarely start again.
   */
  async function linkAudit(query: Query, groups: readonly AuditGroup[], closing = false) {
    const stamped = groups.flatMap((group) => group.events.map((event) => ({ event, at: group.at })));
    if (stamped.length === 0) return;
    const before = lastHead;
    if (before !== null && streak >= GUESS_AFTER) {
      const guess = chained(stamped, before);
      let linked: Row[];
      try {
        linked = await query(
          `WITH h AS (
             UPDATE ${tables.auditHead} SET seq = $11, hash = decode($12, 'hex')
             WHERE seq = $13::bigint AND hash = decode($14, 'hex') RETURNING 1
           ), added AS (
             ${insertAudit} WHERE EXISTS (SELECT 1 FROM h)
           )
           SELECT ${closing ? '1 / count(*)::int' : 'count(*)::int'} AS linked FROM h`,
          [...guess.values, before.seq, before.hash],
          { last: closing },
        );
      } catch (error) {
        if (!closing || !isDivisionByZero(error)) throw error;
        streak = 0;
        throw new AuditHeadMoved();
      }
      if (Number(linked[0]?.linked ?? 0) === 1) {
        lastHead = guess.head;
        return;
      }
      streak = 0;
    }
    // FOR UPDATE waits for the current holder and then reads the row as it committed, so
    // locking and reading the tail is one round trip (a separate advisory lock would be two).
    const head = await query(`SELECT seq, hash FROM ${tables.auditHead} FOR UPDATE`);
    if (head[0] === undefined) throw new Error(`${tables.auditHead} has no row; the schema is damaged`);
    const read = toAuditLink(head[0], 'audit_head');
    if (before !== null) streak = read.seq === before.seq && read.hash === before.hash ? streak + 1 : 0;
    const linked = chained(stamped, read);
    await query(
      `WITH added AS (${insertAudit})
       UPDATE ${tables.auditHead} SET seq = $11, hash = decode($12, 'hex')`,
      linked.values,
      { last: closing },
    );
    // If this transaction rolls back, the guess is wrong next time: one statement that matches nothing.
    lastHead = linked.head;
  }

  /** Links `events`, all stamped `at`; see linkAudit. */
  async function appendAudit(query: Query, events: readonly AuditEvent[] | undefined, at: string) {
    if (events === undefined || events.length === 0) return;
    await linkAudit(query, [{ events, at }]);
  }

  return { insertMessages, insertApproval, insertExecution, insertRule, appendAudit, linkAudit };
}
