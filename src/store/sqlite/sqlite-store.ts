import { resolve } from 'node:path';
import type { Decision } from '../../core/approval.ts';
import type { AuditEntry } from '../../core/audit.ts';
import type { ExecutionRecord, ExecutionStatus } from '../../core/execution.ts';
import type { JsonValue } from '../../core/json.ts';
import { decisionNeedsUnexpired } from '../approval-rules.ts';
import type { CheckpointStore } from '../checkpoint-store.ts';
import { jsonCodec, type PayloadCodec } from '../codec.ts';
import { assertSnapshotConsistent } from '../snapshot-rules.ts';
import type {
  ApprovalFilter,
  DecideResult,
  Delivery,
  DeliveryStatus,
  ExecutionFinish,
  ExecutionStart,
  ExecutionStartResult,
  LeaseInfo,
  LeaseRequest,
  SessionSnapshot,
  StandingRule,
  StepCommit,
  Store,
  WebSessionRecord,
} from '../store.ts';
import {
  approvalOutsideSession,
  executionAlreadyFinished,
  executionExists,
  executionNotFound,
  leaseLost,
  ruleOutsideSession,
  sessionExists,
  sessionNotFound,
  staleStep,
} from '../store-errors.ts';
import { adoptLegacyRequests } from './adopt-legacy-requests.ts';
import { APPROVAL_COLUMNS, AUDIT_COLUMNS, EXECUTION_COLUMNS, SESSION_COLUMNS } from './columns.ts';
import { createConnection } from './connection.ts';
import { openDatabase } from './open-database.ts';
import { createRowQueries } from './row-queries.ts';
import { createRowWriters } from './row-writers.ts';
import { toApproval, toAuditEntry, toExecution, toSession, toStateValue } from './rows.ts';
import type { SqliteCheck } from './sqlite-check.ts';
import { createSqliteCheckpoints } from './sqlite-checkpoints.ts';
import { translateSqliteError } from './sqlite-errors.ts';

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

export interface SqliteStore extends Store, CheckpointStore {
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
const DUE_REQUESTS_OF_KIND_SQL = `SELECT ${APPROVAL_COLUMNS} FROM approvals INDEXED BY approvals_due
  WHERE status = 'pending' AND expires_at <= ? AND kind = ? ORDER BY expires_at, id LIMIT ?`;

const DELIVERY_COLUMNS =
  'id, kind, payload, created_at, status, attempts, next_at, claimed_by, last_error, finished_at';

function textOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

const WEB_SESSION_COLUMNS = 'id_hash, approver, created_at, expires_at';

function toWebSession(row: Record<string, unknown>): WebSessionRecord {
  return {
    idHash: String(row.id_hash),
    approver: String(row.approver),
    createdAt: String(row.created_at),
    expiresAtMs: Number(row.expires_at),
  };
}

function toDelivery(codec: PayloadCodec, row: Record<string, unknown>): Delivery {
  const id = String(row.id);
  return {
    id,
    kind: String(row.kind),
    payload: codec.decode(String(row.payload), `deliveries(id=${id}).payload`) as JsonValue,
    createdAt: String(row.created_at),
    status: String(row.status) as DeliveryStatus,
    attempts: Number(row.attempts),
    nextAtMs: Number(row.next_at),
    claimedBy: textOrNull(row.claimed_by),
    lastError: textOrNull(row.last_error),
    finishedAt: textOrNull(row.finished_at),
  };
}

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
    insertMessage,
    insertApproval,
    insertExecution,
    insertRule,
    appendAudit: appendAuditRows,
  } = createRowWriters(sql, codec);

  function takeLease(request: LeaseRequest): boolean {
    const result = request.renew
      ? sql('UPDATE sessions SET lease_until = ? WHERE id = ? AND lease_owner = ?').run(
          request.untilMs,
          request.session,
          request.owner,
        )
      : sql(
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
    const result = finish.result === null ? null : codec.encode(finish.result);
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
    ...createSqliteCheckpoints({ sql, run, write }, codec, appendAuditRows, insertApproval),

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
        const holder = typeof row.lease_owner === 'string' ? row.lease_owner : null;
        if (holder !== step.leaseOwner) throw leaseLost(step.session, holder, step.leaseOwner);
        if (row.message_count !== step.expectedMessageCount) {
          throw staleStep(step.session, Number(row.message_count), step.expectedMessageCount);
        }
        for (const finish of step.finishes ?? []) finishRow(finish.requestId, finish);
        let seq = step.expectedMessageCount;
        for (const message of step.append) {
          insertMessage(step.session, { seq, at: step.at, message });
          seq += 1;
        }
        for (const request of step.approvals ?? []) {
          if (request.session !== step.session) {
            throw approvalOutsideSession(request.id, request.session, step.session);
          }
          insertApproval(request);
        }
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
          batch = step.batch === null ? null : codec.encode(step.batch);
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

    async releaseLease(session, owner) {
      await write(() => releaseLeaseRow(session, owner));
    },

    async getLease(session): Promise<LeaseInfo | null> {
      return run(() => {
        const row = sql('SELECT lease_owner, lease_until FROM sessions WHERE id = ?').get(session);
        if (row === undefined) return null;
        return {
          owner: typeof row.lease_owner === 'string' ? row.lease_owner : null,
          untilMs: Number(row.lease_until),
        };
      });
    },

    async getApproval(id) {
      return run(() => approvalById(id));
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

    async decide(id, decision: Decision, audit, options = {}): Promise<DecideResult> {
      return write(() => {
        const encoded = codec.encode(decision);
        // RETURNING: the decided row comes back from the compare-and-set itself.
        const row = decisionNeedsUnexpired(decision)
          ? sql(
              `UPDATE approvals SET status = ?, decision = ?
               WHERE id = ? AND status = 'pending' AND expires_at > ? RETURNING ${APPROVAL_COLUMNS}`,
            ).get(decision.verdict, encoded, id, decision.at)
          : sql(
              `UPDATE approvals SET status = ?, decision = ? WHERE id = ? AND status = 'pending' RETURNING ${APPROVAL_COLUMNS}`,
            ).get(decision.verdict, encoded, id);
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
        return { won: true, request, leased };
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
        const existing = executionById(start.requestId);
        if (existing !== null) return { created: false, record: existing };
        requireSession(start.session);
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

    async listExecutions(filter: { session?: string; status?: ExecutionStatus } = {}) {
      return run(() =>
        filtered(
          EXECUTION_COLUMNS,
          'executions',
          [
            ['session', filter.session],
            ['status', filter.status],
          ],
          'started_at, request_id',
        ).map((row) => toExecution(codec, row)),
      );
    },

    async appendAudit(events, at) {
      await write(() => appendAuditRows(events, at));
    },

    async listAudit(filter: { session?: string } = {}): Promise<AuditEntry[]> {
      return run(() =>
        filtered(AUDIT_COLUMNS, 'audit', [['session', filter.session]], 'seq').map((row) =>
          toAuditEntry(codec, row),
        ),
      );
    },

    async getState(namespace, key) {
      return run(() => {
        const row = sql('SELECT value FROM state WHERE namespace = ? AND key = ?').get(namespace, key);
        return row === undefined ? undefined : toStateValue(codec, row, namespace, key);
      });
    },

    async setState(namespace, key, value: JsonValue) {
      await write(() => {
        sql(
          `INSERT INTO state (namespace, key, value) VALUES (?, ?, ?)
           ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value`,
        ).run(namespace, key, codec.encode(value));
      });
    },

    async enqueueDelivery(delivery) {
      return write(
        () =>
          sql(
            `INSERT INTO deliveries (id, kind, payload, created_at, next_at) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (id) DO NOTHING`,
          ).run(
            delivery.id,
            delivery.kind,
            codec.encode(delivery.payload),
            delivery.createdAt,
            delivery.nextAtMs,
          ).changes > 0,
      );
    },

    async claimDeliveries(claim) {
      if (claim.limit < 1) return [];
      // Pollers call this every second: when nothing is due, a read answers without taking
      // the write lock. The claim itself re-checks inside its transaction.
      const due = run(() =>
        sql(`SELECT 1 AS due FROM deliveries WHERE status = 'pending' AND next_at <= ? LIMIT 1`).get(
          claim.nowMs,
        ),
      );
      if (due === undefined) return [];
      // One write transaction (BEGIN IMMEDIATE): no other connection can claim in between.
      const rows = await write(() =>
        sql(
          `UPDATE deliveries SET claimed_by = ?, next_at = ?, attempts = attempts + 1
           WHERE id IN (
             SELECT id FROM deliveries WHERE status = 'pending' AND next_at <= ?
             ORDER BY created_at, id LIMIT ?
           ) RETURNING ${DELIVERY_COLUMNS}`,
        ).all(claim.owner, claim.nowMs + claim.leaseMs, claim.nowMs, claim.limit),
      );
      // RETURNING comes in no particular order.
      return rows
        .map((row) => toDelivery(codec, row))
        .sort((a, b) =>
          a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1,
        );
    },

    async finishDelivery(id, owner, outcome) {
      return write(() => {
        const result =
          outcome.status === 'retry'
            ? sql(
                `UPDATE deliveries SET next_at = ?, claimed_by = NULL, last_error = ?
                 WHERE id = ? AND status = 'pending' AND claimed_by = ?`,
              ).run(outcome.nextAtMs, outcome.error, id, owner)
            : sql(
                `UPDATE deliveries SET status = ?, claimed_by = NULL, finished_at = ?,
                   last_error = COALESCE(?, last_error)
                 WHERE id = ? AND status = 'pending' AND claimed_by = ?`,
              ).run(
                outcome.status,
                outcome.at,
                outcome.status === 'failed' ? outcome.error : null,
                id,
                owner,
              );
        return result.changes > 0;
      });
    },

    async getDelivery(id) {
      return run(() => {
        const row = sql(`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE id = ?`).get(id);
        return row === undefined ? null : toDelivery(codec, row);
      });
    },

    async createWebSession(session, nowMs) {
      await write(() => {
        sql('DELETE FROM web_sessions WHERE expires_at <= ?').run(nowMs);
        sql(
          `INSERT INTO web_sessions (${WEB_SESSION_COLUMNS}) VALUES (?, ?, ?, ?)
           ON CONFLICT (id_hash) DO UPDATE SET approver = excluded.approver,
             created_at = excluded.created_at, expires_at = excluded.expires_at`,
        ).run(session.idHash, session.approver, session.createdAt, session.expiresAtMs);
      });
    },

    async getWebSession(idHash, nowMs) {
      return run(() => {
        const row = sql(
          `SELECT ${WEB_SESSION_COLUMNS} FROM web_sessions WHERE id_hash = ? AND expires_at > ?`,
        ).get(idHash, nowMs);
        return row === undefined ? null : toWebSession(row);
      });
    },

    async touchWebSession(idHash, update) {
      return write(() => {
        const row = sql(
          `UPDATE web_sessions SET expires_at = MAX(expires_at, ?)
           WHERE id_hash = ? AND expires_at > ? RETURNING ${WEB_SESSION_COLUMNS}`,
        ).get(update.expiresAtMs, idHash, update.nowMs);
        return row === undefined ? null : toWebSession(row);
      });
    },

    async deleteWebSession(idHash) {
      return write(() => sql('DELETE FROM web_sessions WHERE id_hash = ?').run(idHash).changes > 0);
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
      assertSnapshotConsistent(snapshot);
      await write(() => {
        const { session } = snapshot;
        if (sessionById(session.id) !== null) throw sessionExists(session.id);
        sql(`INSERT INTO sessions (${SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`).run(
          session.id,
          session.agent,
          session.principal,
          session.createdAt,
          session.updatedAt,
          session.messageCount,
          session.batch === null ? null : codec.encode(session.batch),
        );
        for (const message of snapshot.messages) insertMessage(session.id, message);
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
  return store;
}
