import type { AuditEvent } from '../../core/audit.ts';
import { deliveryIdsOf } from '../../core/delivery-id.ts';
import type { PayloadCodec } from '../codec.ts';
import type {
  ErasureCounts,
  PrincipalErasure,
  PurgeBatch,
  PurgeCounts,
  Retention,
} from '../ports/erasure.ts';
import { APPROVAL_COLUMNS } from '../sql/columns.ts';
import { toApproval } from '../sql/rows.ts';
import type { Connection } from './connection.ts';

// Id lists travel as one JSON array parameter, read back by json_each: one statement per
// table whatever the number of rows.
const IN_LIST = '(SELECT value FROM json_each(?))';
const ENDED_RUN = `('completed', 'failed', 'expired')`;
/** Erased data: an empty object, never decoded (the reader knows from erased_at). */
const ERASED_DATA = '{}';

// `+status`: left to itself the planner walks every pending row (approvals_by_status)
// for the second half; the customer's sessions and their requests are a handful.
/** Exported so a test can ask SQLite for its plan: a customer's requests, never every pending row. */
export const PENDING_OF_SQL = `SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE +status = 'pending' AND customer = ?1
           UNION SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE +status = 'pending'
             AND session IN (SELECT id FROM sessions WHERE principal = ?1)
           ORDER BY created_at, id`;

/** Exported so a test can ask SQLite for its plan: the runs started for a customer, by index. */
export const RUNS_OF_SQL =
  'SELECT id FROM workflow_runs INDEXED BY workflow_runs_by_customer WHERE customer = ?';

type Ids = readonly string[];
const list = (ids: Ids): string => JSON.stringify(ids);

/**
 * Erasure and retention on the SQLite file: every table of the customer in one write
 * transaction, and purges in bounded batches read from the partial indexes of migration 11.
 */
export function createSqliteErasure(
  connection: Pick<Connection, 'sql' | 'run' | 'write'>,
  codec: PayloadCodec,
  appendAudit: (events: readonly AuditEvent[] | undefined, at: string) => void,
): PrincipalErasure & Retention {
  const { sql, run, write } = connection;
  let secure = false;
  /**
   * Deleted rows stay in SQLite's free pages (and the WAL) until overwritten; secure_delete
   * zeroes them as they are freed, and a TRUNCATE checkpoint afterwards empties the WAL of
   * the frames that held them (when no other connection is reading at that moment). Set on
   * this connection from the first erasure or purge on: a delete anywhere costs a little
   * more I/O afterwards.
   */
  function zeroFreedPages(): void {
    if (secure) return;
    run(() => sql('PRAGMA secure_delete = ON').get());
    secure = true;
  }
  const truncateWal = () => run(() => sql('PRAGMA wal_checkpoint(TRUNCATE)').get());
  const column = (rows: readonly Record<string, unknown>[], name: string): string[] =>
    rows.map((row) => String(row[name]));
  const changes = (text: string, ...values: (string | number | null)[]): number =>
    Number(sql(text).run(...values).changes);

  /** Removes sessions with everything hanging off them; returns the counts by table. */
  function removeSessions(sessions: Ids) {
    const ids = list(sessions);
    const executions = changes(`DELETE FROM executions WHERE session IN ${IN_LIST}`, ids);
    changes(`DELETE FROM rules WHERE session IN ${IN_LIST}`, ids);
    const messages = changes(`DELETE FROM messages WHERE session IN ${IN_LIST}`, ids);
    const requests = changes(`DELETE FROM approvals WHERE session IN ${IN_LIST}`, ids);
    const removed = changes(`DELETE FROM sessions WHERE id IN ${IN_LIST}`, ids);
    return { sessions: removed, messages, requests, executions };
  }

  function removeRequests(requests: Ids) {
    const ids = list(requests);
    const executions = changes(`DELETE FROM executions WHERE request_id IN ${IN_LIST}`, ids);
    const removed = changes(`DELETE FROM approvals WHERE id IN ${IN_LIST}`, ids);
    return { requests: removed, executions };
  }

  function removeRuns(runs: Ids) {
    const ids = list(runs);
    const requests = column(sql(`SELECT id FROM approvals WHERE run IN ${IN_LIST}`).all(ids), 'id');
    const removed = removeRequests(requests);
    const checkpoints = changes(`DELETE FROM workflow_checkpoints WHERE run IN ${IN_LIST}`, ids);
    const count = changes(`DELETE FROM workflow_runs WHERE id IN ${IN_LIST}`, ids);
    return { runs: count, checkpoints, ...removed };
  }

  function eraseAuditOf(sessions: Ids, requests: Ids, at: string): number {
    return (
      changes(
        `UPDATE audit SET data = ?, erased_at = ? WHERE erased_at IS NULL AND session IN ${IN_LIST}`,
        ERASED_DATA,
        at,
        list(sessions),
      ) +
      changes(
        `UPDATE audit SET data = ?, erased_at = ? WHERE erased_at IS NULL AND request_id IN ${IN_LIST}`,
        ERASED_DATA,
        at,
        list(requests),
      )
    );
  }

  // Finished: no open batch (so nothing pending), no live lease, nothing pending anyway.
  const FINISHED_SESSIONS = `FROM sessions INDEXED BY sessions_finished
    WHERE batch IS NULL AND updated_at < ?1 AND (lease_owner IS NULL OR lease_until < ?2)
      AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.session = sessions.id AND a.status = 'pending')`;
  const ENDED_RUNS = `FROM workflow_runs INDEXED BY workflow_runs_ended
    WHERE status IN ${ENDED_RUN} AND updated_at < ?1`;
  // Decided, and neither its session's batch nor its run still waits on it.
  const DECIDED_REQUESTS = `FROM approvals INDEXED BY approvals_finished_by_created
    WHERE status <> 'pending' AND created_at < ?1
      AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = approvals.session AND s.batch IS NOT NULL)
      AND (run IS NULL OR NOT EXISTS (
        SELECT 1 FROM workflow_runs r WHERE r.id = approvals.run AND r.status NOT IN ${ENDED_RUN}))`;
  // The erasure and purge entries stay readable: verification checks erased entries against them.
  const READABLE_AUDIT = `FROM audit INDEXED BY audit_readable_by_at WHERE erased_at IS NULL AND at < ?1
    AND kind NOT IN ('principal.erased', 'retention.purged')`;

  /** What erasing `principal` removes, found before anything goes (runsToErase reads the same). */
  function theirs(principal: string) {
    const sessions = column(sql('SELECT id FROM sessions WHERE principal = ?').all(principal), 'id');
    const found = sql(
      `SELECT id, run FROM approvals WHERE customer = ?
       UNION SELECT id, run FROM approvals WHERE session IN ${IN_LIST}`,
    ).all(principal, list(sessions));
    // Runs started for them (by index), and runs that raised a request naming them.
    const started = column(sql(RUNS_OF_SQL).all(principal), 'id');
    const runs = [
      ...new Set([...started, ...found.flatMap((row) => (row.run === null ? [] : [String(row.run)]))]),
    ];
    return { sessions, found, runs };
  }

  const count = (from: string, ...values: (string | number)[]): number =>
    Number((sql(`SELECT COUNT(*) AS n ${from}`).get(...values) as { n: number }).n);

  return {
    async listPendingOf(principal) {
      return run(() =>
        sql(PENDING_OF_SQL)
          .all(principal)
          .map((row) => toApproval(codec, row)),
      );
    },

    async runsToErase(principal) {
      return run(() => theirs(principal).runs);
    },

    async erasePrincipal({ principal, at, audit }): Promise<ErasureCounts> {
      zeroFreedPages();
      const erased = await write(() => {
        const { sessions, found, runs } = theirs(principal);
        const runRequests = column(
          sql(`SELECT id FROM approvals WHERE run IN ${IN_LIST}`).all(list(runs)),
          'id',
        );
        const requests = [...new Set([...column(found, 'id'), ...runRequests])];
        const auditEntries = eraseAuditOf([...sessions, ...runs.map((id) => `wf.${id}`)], requests, at);
        const deliveries = changes(
          `DELETE FROM deliveries WHERE id IN ${IN_LIST}`,
          list(requests.flatMap(deliveryIdsOf)),
        );
        const ofRuns = removeRuns(runs);
        const ofRequests = removeRequests(requests);
        const ofSessions = removeSessions(sessions);
        const counts: ErasureCounts = {
          sessions: ofSessions.sessions,
          messages: ofSessions.messages,
          requests: ofRuns.requests + ofRequests.requests + ofSessions.requests,
          executions: ofRuns.executions + ofRequests.executions + ofSessions.executions,
          runs: ofRuns.runs,
          checkpoints: ofRuns.checkpoints,
          auditEntries,
          deliveries,
        };
        appendAudit(audit?.(counts), at);
        return counts;
      });
      truncateWal();
      return erased;
    },

    async purgeBatch(batch: PurgeBatch): Promise<PurgeCounts> {
      const { before, limit, at, nowMs } = batch;
      if (batch.dryRun) {
        return run(() => ({
          sessions: before.sessions === undefined ? 0 : count(FINISHED_SESSIONS, before.sessions, nowMs),
          runs: before.runs === undefined ? 0 : count(ENDED_RUNS, before.runs),
          requests: before.requests === undefined ? 0 : count(DECIDED_REQUESTS, before.requests),
          auditEntries: before.audit === undefined ? 0 : count(READABLE_AUDIT, before.audit),
        }));
      }
      zeroFreedPages();
      const purged = await write(() => {
        const pick = (select: string, from: string, order: string, ...values: (string | number)[]) =>
          sql(`SELECT ${select} ${from} ORDER BY ${order} LIMIT ${Math.max(1, Math.trunc(limit))}`).all(
            ...values,
          );
        const sessions =
          before.sessions === undefined
            ? []
            : column(pick('id', FINISHED_SESSIONS, 'updated_at, id', before.sessions, nowMs), 'id');
        const runs =
          before.runs === undefined
            ? []
            : column(pick('id', ENDED_RUNS, 'updated_at, id', before.runs), 'id');
        const requests =
          before.requests === undefined
            ? []
            : column(pick('id', DECIDED_REQUESTS, 'created_at, id', before.requests), 'id');
        const seqs =
          before.audit === undefined
            ? []
            : pick('seq', READABLE_AUDIT, 'at, seq', before.audit).map((row) => Number(row.seq));
        removeSessions(sessions);
        removeRuns(runs);
        const ofRequests = removeRequests(requests);
        const auditEntries = changes(
          `UPDATE audit SET data = ?, erased_at = ? WHERE erased_at IS NULL AND seq IN ${IN_LIST}`,
          ERASED_DATA,
          at,
          JSON.stringify(seqs),
        );
        const counts = {
          sessions: sessions.length,
          runs: runs.length,
          requests: ofRequests.requests,
          auditEntries,
        };
        if (Object.values(counts).some((n) => n > 0)) appendAudit(batch.audit?.(counts), at);
        return counts;
      });
      if (Object.values(purged).some((n) => n > 0)) truncateWal();
      return purged;
    },
  };
}
