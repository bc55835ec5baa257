import { resolve } from 'node:path';
import type { Decision } from '../../core/approval.ts';
import type { AuditEntry } from '../../core/audit.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import type { JsonValue } from '../../core/json.ts';
import { decisionScope, sameKeyAs, sessionScope } from '../../crypto/scopes.ts';
import { decisionNeedsUnexpired } from '../approval-rules.ts';
import { auditCursor, auditCursorSql } from '../audit-cursor.ts';
import type { CheckpointStore } from '../checkpoint-store.ts';
import { jsonCodec, type PayloadCodec } from '../codec.ts';
import { assembleStats, assertStatsQuery } from '../decision-stats.ts';
import { assertExecutionFilter } from '../execution-page.ts';
import { guardStore } from '../guard.ts';
import { holdsLease } from '../lease-rules.ts';
import type { DataKeys } from '../ports/data-keys.ts';
import type { SchemaVersion } from '../ports/schema-version.ts';
import type { Outbox } from '../ports/server/outbox.ts';
import type { WebSessionStore } from '../ports/server/web-session-store.ts';
import { pageOf, planPage } from '../request-page.ts';
import { decidedValues } from '../row-values.ts';
import { APPROVAL_COLUMNS, AUDIT_COLUMNS, EXECUTION_COLUMNS, SESSION_COLUMNS } from '../sql/columns.ts';
import { decisionStatsSql, toDecidedGroup, toDecisionTimes, toReason } from '../sql/decision-stats-sql.ts';
import { executionPageSql } from '../sql/execution-page-sql.ts';
import { requestPageSql } from '../sql/request-page-sql.ts';
import { toApproval, toAuditEntry, toExecution, toFence, toLease, toSession } from '../sql/rows.ts';
import { sessionValues } from '../sql/values.ts';
import type {
  ApprovalFilter,
  ApprovalUpdateResult,
  AuditQuery,
  DecideResult,
  ExecutionFilter,
  ExecutionFinish,
  ExecutionStart,
  ExecutionStartResult,
  LeaseInfo,
  LeaseRequest,
  SessionSnapshot,
  StandingRule,
  StepCommit,
  Store,
} from '../store.ts';
import {
  executionAlreadyFinished,
  executionExists,
  executionNotFound,
  executionStartRefused,
  leaseLost,
  ruleOutsideSession,
  sessionExists,
  sessionNotFound,
  staleStep,
} from '../store-errors.ts';
import { adoptLegacyRequests } from './adopt-legacy-requests.ts';
import { createConnection } from './connection.ts';
import { migrations } from './migrations.ts';
import { openDatabase } from './open-database.ts';
import { SQLITE_PAGE_DIALECT } from './page-requests.ts';
import { createRowQueries } from './row-queries.ts';
import { createRowWriters } from './row-writers.ts';
import { createSqliteAppState } from './sqlite-app-state.ts';
import type { SqliteCheck } from './sqlite-check.ts';
import { createSqliteCheckpoints } from './sqlite-checkpoints.ts';
import { createSqliteDataKeys } from './sqlite-data-keys.ts';
import { createSqliteErasure } from './sqlite-erasure.ts';
import { translateSqliteError } from './sqlite-errors.ts';
import { createSqliteOutbox } from './sqlite-outbox.ts';
import { createSqliteRequestTimers } from './sqlite-request-timers.ts';
import { createSqliteWebSessions } from './sqlite-web-sessions.ts';
import { MATCH_COUNT_SQL, narrowing } from './text-search.ts';

/** Exported so a test can ask SQLite for the plan: a range walk of the primary key, no scan. */
export const AUDIT_PAGE_SQL = auditCursorSql('audit', AUDIT_COLUMNS, false, {
  session: '',
  afterSeq: '?1',
  limit: '?2',
});
export const AUDIT_SESSION_PAGE_SQL = auditCursorSql('audit', AUDIT_COLUMNS, true, {
  session: '?2',
  afterSeq: '?1',
  limit: '?3',
});

export interface SqliteStoreOptions {
  path: string;
  codec?: PayloadCodec;
  busyTimeoutMs?: number;
  /**
   * `quick` runs PRAGMA quick_check on open and refuses a damaged file with CORRUPT_DATA. It
   * reads the whole file (about a second per GB, see docs/configuration.md), so `serve`,
   * `worker` and `audit --verify` ask for it and short CLI commands do not.
   */
  check?: SqliteCheck;
  /**
   * Called after each durable transaction with the number of writes it carried: concurrent
   * writes share one (group commit), so this is how to see the batching at work.
   */
  onCommit?: (writes: number) => void;
}

/**
 * Also the server's outbox and sign-in store (`deliveries`, `web_sessions`): `createServer`
 * uses them when given this store.
 */
export interface SqliteStore
  extends Store,
    CheckpointStore,
    Outbox,
    WebSessionStore,
    SchemaVersion,
    DataKeys {
  readonly kind: 'sqlite';
  /** Workflow writes link their audit events onto this store's chain in their own transaction. */
  readonly keepsAudit: true;
  /** Absolute path of the database file. */
  readonly path: string;
  /** Folds the WAL back into the main file and truncates it, so file sizes mean something. */
  checkpoint(): Promise<void>;
}

const DEFAULT_BUSY_TIMEOUT_MS = 5000;

/** Exported so a test can ask SQLite for its plan: it must walk the partial index `approvals_due`. */
// INDEXED BY: left to itself the planner prefers approvals_by_status (an equality on
// status) and sorts every pending row; the partial index is already in expiry order.
export const DUE_REQUESTS_SQL = `SELECT ${APPROVAL_COLUMNS} FROM approvals INDEXED BY approvals_due
  WHERE status = 'pending' AND expires_at <= ? ORDER BY expires_at, id LIMIT ?`;
/** The partial index holds pending rows only: counting it reads no decided request. */
const COUNT_PENDING_SQL = `SELECT COUNT(*) AS n FROM approvals INDEXED BY approvals_due WHERE status = 'pending'`;
const DUE_REQUESTS_OF_KIND_SQL = `SELECT ${APPROVAL_COLUMNS} FROM approvals INDEXED BY approvals_due
  WHERE status = 'pending' AND expires_at <= ? AND kind = ? ORDER BY expires_at, id LIMIT ?`;

/** Exported so a test can ask SQLite for the plans: ranges of the covering index of decided rows. */
export const SQLITE_STATS = decisionStatsSql({
  approvals: 'approvals',
  since: '?1',
  until: '?2',
  msToDecision: 'CAST(ROUND((julianday(decided_at) - julianday(created_at)) * 86400000) AS INTEGER)',
  indexHint: 'INDEXED BY approvals_decided',
});

/**
 * The Store on one SQLite file shared by any number of processes: each method is one
 * statement or one transaction, so a crash or a competing process never sees half a write.
 */
export function createSqliteStore(options: SqliteStoreOptions): SqliteStore {
  const path = resolve(options.path);
  const codec = options.codec ?? jsonCodec;
  const db = openDatabase(path, options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS, options.check);
  try {
    adoptLegacyRequests(db, codec);
  } catch (error) {
    db.close();
    throw translateSqliteError(error, path);
  }
  const { sql, run, write, snapshotRead, close } = createConnection(db, path, options.onCommit);
  const {
    sessionById,
    requireSession,
    approvalById,
    executionById,
    ruleById,
    rulesOf,
    messagesOf,
    filtered,
    stalledSessions,
  } = createRowQueries(sql, codec);
  const {
    insertMessages,
    insertApproval,
    insertExecution,
    insertRule,
    appendAudit: appendAuditRows,
  } = createRowWriters(sql, codec);

  function takeLease(request: LeaseRequest): boolean {
    const result = sql(
      `UPDATE sessions SET lease_owner = ?, lease_until = ?
       WHERE id = ? AND (lease_owner IS NULL OR lease_until < ? OR lease_owner = ? OR lease_owner = ?)`,
    ).run(
      request.owner,
      request.untilMs,
      request.session,
      request.nowMs,
      request.owner,
      request.takeOverFrom ?? null,
    );
    return result.changes > 0;
  }

  function releaseLeaseRow(session: string, owner: string): void {
    sql('UPDATE sessions SET lease_owner = NULL, lease_until = 0 WHERE id = ? AND lease_owner = ?').run(
      session,
      owner,
    );
  }

  /** The ledger result; the record is built from what was read, not read again. */
  function finishRow(requestId: string, finish: ExecutionFinish): ExecutionRecord {
    const existing = executionById(requestId);
    if (existing === null) throw executionNotFound(requestId);
    if (existing.status !== 'started' && existing.status !== 'unknown') {
      throw executionAlreadyFinished(requestId, existing.status);
    }
    const result =
      finish.result === null ? null : codec.encode(finish.result, sessionScope(existing.session));
    sql('UPDATE executions SET status = ?, result = ?, finished_at = ? WHERE request_id = ?').run(
      finish.status,
      result,
      finish.at,
      requestId,
    );
    appendAuditRows(finish.audit, finish.at);
    // Decoded from the stored text, so the record is exactly what a later read returns.
    return {
      ...existing,
      status: finish.status,
      result:
        result === null
          ? null
          : (codec.decode(result, `executions(request_id=${requestId}).result`) as JsonValue),
      finishedAt: finish.at,
    };
  }

  const store: SqliteStore = {
    kind: 'sqlite',
    path,
    keepsAudit: true,
    // Workflow runs share the file (and the `state` table) with the agents' sessions, and
    // their audit entries join the agents' chain.
    ...createSqliteCheckpoints({ sql, run, write, snapshotRead }, codec, appendAuditRows, insertApproval),
    ...createSqliteAppState({ sql, run, write }, codec),
    ...createSqliteRequestTimers({ sql, run, write }, codec, appendAuditRows),
    ...createSqliteOutbox({ sql, run, write }, codec),
    ...createSqliteWebSessions({ sql, run, write }),
    ...createSqliteErasure({ sql, run, write }, codec, appendAuditRows),
    ...createSqliteDataKeys({ sql, run, write }),

    async ensureSession(input) {
      return write(() => {
        sql(
          `INSERT INTO sessions (id, agent, principal, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
        ).run(input.id, input.agent, input.principal, input.at, input.at);
        return requireSession(input.id);
      });
    },

    async getSession(id) {
      return run(() => sessionById(id));
    },

    async listSessions() {
      return run(() =>
        sql(`SELECT ${SESSION_COLUMNS} FROM sessions ORDER BY created_at, id`)
          .all()
          .map((row) => toSession(codec, row)),
      );
    },

    async loadMessages(session) {
      return run(() => messagesOf(session));
    },

    async listStalledSessions(query) {
      return run(() => stalledSessions(query));
    },

    async commitStep(step: StepCommit) {
      return write(() => {
        // The whole row is read here so the returned record can be built without reading
        // the session again after the UPDATE: this runs once per agent step.
        const row = sql(`SELECT ${SESSION_COLUMNS}, lease_owner FROM sessions WHERE id = ?`).get(
          step.session,
        );
        if (row === undefined) throw sessionNotFound(step.session);
        const { owner: holder, messageCount } = toFence(row, step.session);
        if (holder !== step.leaseOwner) throw leaseLost(step.session, holder, step.leaseOwner);
        if (messageCount !== step.expectedMessageCount) {
          throw staleStep(step.session, messageCount, step.expectedMessageCount);
        }
        for (const finish of step.finishes ?? []) finishRow(finish.requestId, finish);
        const seq = step.expectedMessageCount + step.append.length;
        insertMessages(
          step.session,
          step.append.map((message, i) => ({ seq: step.expectedMessageCount + i, at: step.at, message })),
        );
        for (const request of step.approvals ?? []) insertApproval(request);
        // `batch` ends up as the text now stored, new or kept, so the returned record decodes
        // exactly what a later read would.
        let batch = row.batch;
        if (step.batch === undefined) {
          sql('UPDATE sessions SET message_count = ?, updated_at = ? WHERE id = ?').run(
            seq,
            step.at,
            step.session,
          );
        } else {
          batch = step.batch === null ? null : codec.encode(step.batch, sessionScope(step.session));
          sql('UPDATE sessions SET message_count = ?, updated_at = ?, batch = ? WHERE id = ?').run(
            seq,
            step.at,
            batch,
            step.session,
          );
        }
        if (step.releaseLease) releaseLeaseRow(step.session, step.leaseOwner);
        appendAuditRows(step.audit, step.at);
        return toSession(codec, { ...row, message_count: seq, updated_at: step.at, batch });
      });
    },

    async acquireLease(request: LeaseRequest) {
      return write(() => takeLease(request));
    },

    async renewLease(renewal) {
      return write(
        () =>
          sql('UPDATE sessions SET lease_until = ? WHERE id = ? AND lease_owner = ?').run(
            renewal.untilMs,
            renewal.session,
            renewal.owner,
          ).changes > 0,
      );
    },

    async releaseLease(session, owner) {
      await write(() => releaseLeaseRow(session, owner));
    },

    async getLease(session): Promise<LeaseInfo | null> {
      return run(() => {
        const row = sql('SELECT lease_owner, lease_until FROM sessions WHERE id = ?').get(session);
        return row === undefined ? null : toLease(row, session);
      });
    },

    async getApproval(id) {
      return run(() => approvalById(id));
    },

    async getApprovalWithSession(id) {
      return run(() => {
        const request = approvalById(id);
        return request === null ? null : { request, session: sessionById(request.session) };
      });
    },

    async listApprovals(filter: ApprovalFilter = {}) {
      return run(() =>
        filtered(
          APPROVAL_COLUMNS,
          'approvals',
          [
            ['status', filter.status],
            ['session', filter.session],
            ['tool', filter.tool],
            ['kind', filter.kind],
            ['run', filter.run],
          ],
          'created_at, id',
        ).map((row) => toApproval(codec, row)),
      );
    },

    async listDue(query) {
      return run(() =>
        (query.kind === undefined
          ? sql(DUE_REQUESTS_SQL).all(query.at, query.limit)
          : sql(DUE_REQUESTS_OF_KIND_SQL).all(query.at, query.kind, query.limit)
        ).map((row) => toApproval(codec, row)),
      );
    },

    async countPending() {
      return run(() => (sql(COUNT_PENDING_SQL).get() as { n: number }).n);
    },

    async decisionStats(query) {
      assertStatsQuery(query);
      return snapshotRead(() => {
        const groups = sql(SQLITE_STATS.groups).all(query.since, query.until).map(toDecidedGroup);
        const times = toDecisionTimes(sql(SQLITE_STATS.times).all(query.since, query.until));
        const reasons = sql(SQLITE_STATS.reasons)
          .all(query.since, query.until)
          .map((row) => toReason(codec, row));
        return assembleStats(query, groups, times, reasons);
      });
    },

    async pageRequests(query) {
      const plan = planPage(query);
      return snapshotRead(() => {
        // Rare trigrams of a partial filter narrow the page to its candidates (text-search.ts).
        const narrowed = narrowing(
          plan,
          (match, cap) => (sql(MATCH_COUNT_SQL).get(match, cap) as { n: number }).n,
        );
        const statements = requestPageSql(SQLITE_PAGE_DIALECT, plan, narrowed);
        const rows = sql(statements.page.text)
          .all(...statements.page.values)
          .map((row) => toApproval(codec, row));
        const total =
          statements.count === null
            ? undefined
            : (sql(statements.count.text).get(...statements.count.values) as { n: number }).n;
        return pageOf(rows, plan, total);
      });
    },

    async decide(id, decision: Decision, audit, options = {}): Promise<DecideResult> {
      return write(() => {
        // Sealed with its request's data key, read here (one lookup by id in this transaction)
        // rather than found through the store.
        const sealedArgs =
          codec.prepare === undefined
            ? undefined
            : sql('SELECT args_json FROM approvals WHERE id = ?').get(id)?.args_json;
        const encoded = codec.encode(decision, sameKeyAs(sealedArgs) ?? decisionScope(id));
        // RETURNING: the decided row comes back from the compare-and-set itself.
        const row = decisionNeedsUnexpired(decision)
          ? sql(
              `UPDATE approvals SET status = ?, decision = ?, decided_at = ?, decided_by = ?, decided_kind = ?
               WHERE id = ? AND status = 'pending' AND expires_at > ? RETURNING ${APPROVAL_COLUMNS}`,
            ).get(decision.verdict, encoded, ...decidedValues({ decision }), id, decision.at)
          : sql(
              `UPDATE approvals SET status = ?, decision = ?, decided_at = ?, decided_by = ?, decided_kind = ?
               WHERE id = ? AND status = 'pending' RETURNING ${APPROVAL_COLUMNS}`,
            ).get(decision.verdict, encoded, ...decidedValues({ decision }), id);
        if (row === undefined) return { won: false, request: approvalById(id) };
        const request = toApproval(codec, row);
        const { lease } = options;
        const { rule } = options;
        if (rule !== undefined) {
          // Throwing here rolls the decision back too: a decision must not stand without the
          // rule it was given with.
          if (rule.session !== request.session) {
            throw ruleOutsideSession(rule.id, rule.session, id, request.session);
          }
          insertRule(rule);
        }
        appendAuditRows(audit, decision.at);
        const leased = lease !== undefined && takeLease({ ...lease, session: request.session });
        if (!leased || options.loadRun !== true) return { won: true, request, leased };
        // Read in the decision's transaction: the run that follows starts without another call.
        return {
          won: true,
          request,
          leased,
          run: { messages: messagesOf(request.session), execution: executionById(id) },
        };
      });
    },

    async recordApproval(id, update, audit): Promise<ApprovalUpdateResult> {
      return write(() => {
        // The compare-and-set on the revision; RETURNING hands back the row it wrote.
        const row = sql(
          `UPDATE approvals SET partial_approvals = ?, pending_edit = ?, required_role = ?,
             approvals_needed = ?, revision = revision + 1
           WHERE id = ? AND status = 'pending' AND revision = ? AND expires_at > ?
           RETURNING ${APPROVAL_COLUMNS}`,
        ).get(
          update.approvals.length === 0 ? null : codec.encode(update.approvals, decisionScope(id)),
          update.edit === null ? null : codec.encode(update.edit, decisionScope(id)),
          update.requiredRole,
          update.approvalsNeeded,
          id,
          update.revision,
          update.at,
        );
        if (row === undefined) return { won: false, request: approvalById(id) };
        appendAuditRows(audit, update.at);
        return { won: true, request: toApproval(codec, row) };
      });
    },

    async listRules(filter: { session?: string; includeRevoked?: boolean } = {}) {
      return run(() => rulesOf(filter));
    },

    async getRule(id) {
      return run(() => ruleById(id));
    },

    async revokeRule(id, by, at, audit): Promise<StandingRule | null> {
      return write(() => {
        const rule = ruleById(id);
        if (rule === null || rule.revokedAt !== null) return rule;
        sql('UPDATE rules SET revoked_at = ?, revoked_by = ? WHERE id = ?').run(at, by, id);
        appendAuditRows(audit, at);
        return { ...rule, revokedAt: at, revokedBy: by };
      });
    },

    async startExecution(start: ExecutionStart, audit): Promise<ExecutionStartResult> {
      return write(() => {
        // Fenced first, in the write transaction (which holds the file's write lock, so no
        // takeover lands between this check and the insert): a run that lost the session
        // learns so even if the row exists.
        if (start.lease !== undefined) {
          const row = sql('SELECT lease_owner, lease_until FROM sessions WHERE id = ?').get(start.session);
          if (row === undefined) throw sessionNotFound(start.session);
          const lease = toLease(row, start.session);
          if (!holdsLease(lease, start.lease))
            throw executionStartRefused(start.requestId, start.session, lease, start.lease);
        }
        const existing = executionById(start.requestId);
        if (existing !== null) return { created: false, record: existing };
        if (start.lease === undefined) requireSession(start.session);
        const record: ExecutionRecord = {
          requestId: start.requestId,
          session: start.session,
          callId: start.callId,
          tool: start.tool,
          args: start.args,
          idempotencyKey: start.idempotencyKey,
          status: 'started',
          result: null,
          attempts: 1,
          startedAt: start.at,
          finishedAt: null,
        };
        insertExecution(record);
        appendAuditRows(audit, start.at);
        return { created: true, record };
      });
    },

    async finishExecution(requestId, finish: ExecutionFinish) {
      return write(() => finishRow(requestId, finish));
    },

    async getExecution(requestId) {
      return run(() => executionById(requestId));
    },

    async listExecutions(filter: ExecutionFilter = {}) {
      assertExecutionFilter(filter);
      const page = executionPageSql('executions', (index) => `?${index}`, filter);
      return run(() =>
        sql(page.text)
          .all(...page.values)
          .map((row) => toExecution(codec, row)),
      );
    },

    async appendAudit(events, at) {
      await write(() => appendAuditRows(events, at));
    },

    async listAudit(query?: AuditQuery): Promise<AuditEntry[]> {
      const { session, afterSeq, limit } = auditCursor(query);
      // LIMIT -1 is SQLite's "no limit".
      return run(() =>
        (session === undefined
          ? sql(AUDIT_PAGE_SQL).all(afterSeq, limit ?? -1)
          : sql(AUDIT_SESSION_PAGE_SQL).all(afterSeq, session, limit ?? -1)
        ).map((row) => toAuditEntry(codec, row)),
      );
    },

    async lastAuditSeq(): Promise<number> {
      return run(() => Number(sql('SELECT max(seq) AS seq FROM audit').get()?.seq ?? 0));
    },

    async schemaVersion() {
      return run(() => ({
        current: Number(sql('PRAGMA user_version').get()?.user_version ?? 0),
        known: migrations.length,
      }));
    },

    async exportSession(id): Promise<SessionSnapshot | null> {
      return snapshotRead(() => {
        const session = sessionById(id);
        if (session === null) return null;
        // Rules stay behind: they are trust granted in this store and are granted again after a move.
        return {
          session,
          messages: messagesOf(id),
          approvals: filtered(APPROVAL_COLUMNS, 'approvals', [['session', id]], 'created_at, id').map((row) =>
            toApproval(codec, row),
          ),
          executions: filtered(
            EXECUTION_COLUMNS,
            'executions',
            [['session', id]],
            'started_at, request_id',
          ).map((row) => toExecution(codec, row)),
        };
      });
    },

    async importSession(snapshot: SessionSnapshot, audit) {
      await write(() => {
        const { session } = snapshot;
        if (sessionById(session.id) !== null) throw sessionExists(session.id);
        sql(`INSERT INTO sessions (${SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`).run(
          ...sessionValues(codec, session),
        );
        insertMessages(session.id, snapshot.messages);
        for (const request of snapshot.approvals) insertApproval(request);
        for (const record of snapshot.executions) {
          if (executionById(record.requestId) !== null) throw executionExists(record.requestId);
          insertExecution(record);
        }
        appendAuditRows(audit, new Date().toISOString());
      });
    },

    async checkpoint() {
      run(() => sql('PRAGMA wal_checkpoint(TRUNCATE)').get());
    },

    async close() {
      close();
    },
  };
  return guardStore(store);
}
