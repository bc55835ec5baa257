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
import type { Tables } from '../sql/tables.ts';
import type { Connection, Query } from './connection.ts';
import { quoteIdentifier } from './schema-name.ts';

const ENDED_RUN = `('completed', 'failed', 'expired')`;
/** Erased data: an empty object, never decoded (the reader knows from erased_at). */
const ERASED_DATA = '{}';

type Ids = readonly string[];

/**
 * Erasure and retention on the PostgreSQL schema, as sqlite-erasure.ts: every table of the
 * customer in one transaction (id lists as one array parameter each), and purges in bounded
 * batches read from the partial indexes of migration 011.
 */
export function createPostgresErasure(
  connection: Pick<Connection, 'query' | 'transaction'>,
  schema: string,
  t: Tables,
  codec: PayloadCodec,
  appendAudit: (query: Query, events: readonly AuditEvent[] | undefined, at: string) => Promise<void>,
): PrincipalErasure & Retention {
  const runsTable = `${quoteIdentifier(schema)}.workflow_runs`;
  const checkpointsTable = `${quoteIdentifier(schema)}.workflow_checkpoints`;
  const column = (rows: readonly Record<string, unknown>[], name: string): string[] =>
    rows.map((row) => String(row[name]));
  // RETURNING 1 counts the rows a statement changed.
  const changes = async (q: Query, text: string, values: unknown[]): Promise<number> =>
    (await q(`${text} RETURNING 1 AS x`, values)).length;

  async function removeSessions(q: Query, sessions: Ids) {
    const ids = [...sessions];
    const executions = await changes(q, `DELETE FROM ${t.executions} WHERE session = ANY($1::text[])`, [ids]);
    await changes(q, `DELETE FROM ${t.rules} WHERE session = ANY($1::text[])`, [ids]);
    const messages = await changes(q, `DELETE FROM ${t.messages} WHERE session = ANY($1::text[])`, [ids]);
    const requests = await changes(q, `DELETE FROM ${t.approvals} WHERE session = ANY($1::text[])`, [ids]);
    const removed = await changes(q, `DELETE FROM ${t.sessions} WHERE id = ANY($1::text[])`, [ids]);
    return { sessions: removed, messages, requests, executions };
  }

  async function removeRequests(q: Query, requests: Ids) {
    const ids = [...requests];
    const executions = await changes(q, `DELETE FROM ${t.executions} WHERE request_id = ANY($1::text[])`, [
      ids,
    ]);
    const removed = await changes(q, `DELETE FROM ${t.approvals} WHERE id = ANY($1::text[])`, [ids]);
    return { requests: removed, executions };
  }

  async function removeRuns(q: Query, runs: Ids) {
    const ids = [...runs];
    const requests = column(
      await q(`SELECT id FROM ${t.approvals} WHERE run = ANY($1::text[])`, [ids]),
      'id',
    );
    const removed = await removeRequests(q, requests);
    const checkpoints = await changes(q, `DELETE FROM ${checkpointsTable} WHERE run = ANY($1::text[])`, [
      ids,
    ]);
    const count = await changes(q, `DELETE FROM ${runsTable} WHERE id = ANY($1::text[])`, [ids]);
    return { runs: count, checkpoints, ...removed };
  }

  const FINISHED_SESSIONS = `FROM ${t.sessions} s
    WHERE s.batch IS NULL AND s.updated_at < $1 AND (s.lease_owner IS NULL OR s.lease_until < $2)
      AND NOT EXISTS (SELECT 1 FROM ${t.approvals} a WHERE a.session = s.id AND a.status = 'pending')`;
  const ENDED_RUNS = `FROM ${runsTable} WHERE status IN ${ENDED_RUN} AND updated_at < $1`;
  const DECIDED_REQUESTS = `FROM ${t.approvals} a
    WHERE a.status <> 'pending' AND a.created_at < $1
      AND NOT EXISTS (SELECT 1 FROM ${t.sessions} s WHERE s.id = a.session AND s.batch IS NOT NULL)
      AND (a.run IS NULL OR NOT EXISTS (
        SELECT 1 FROM ${runsTable} r WHERE r.id = a.run AND r.status NOT IN ${ENDED_RUN}))`;
  // The erasure and purge entries stay readable: verification checks erased entries against them.
  const READABLE_AUDIT = `FROM ${t.audit} WHERE erased_at IS NULL AND at < $1
    AND kind NOT IN ('principal.erased', 'retention.purged')`;

  /**
   * What erasing `principal` removes, found before anything goes (runsToErase reads the same).
   * Erasure locks the customer's sessions and runs (`FOR UPDATE`): a step committing to one
   * waits, then finds it gone.
   */
  async function theirs(q: Query, principal: string, lock: '' | ' FOR UPDATE') {
    const sessions = column(
      await q(`SELECT id FROM ${t.sessions} WHERE principal = $1${lock}`, [principal]),
      'id',
    );
    const found = await q(
      `SELECT id, run FROM ${t.approvals} WHERE customer = $1
       UNION SELECT id, run FROM ${t.approvals} WHERE session = ANY($2::text[])`,
      [principal, sessions],
    );
    // Runs started for them (by index), and runs that raised a request naming them.
    const started = column(
      await q(`SELECT id FROM ${runsTable} WHERE customer = $1${lock}`, [principal]),
      'id',
    );
    const runs = [
      ...new Set([...started, ...found.flatMap((row) => (row.run === null ? [] : [String(row.run)]))]),
    ];
    return { sessions, found, runs };
  }

  const count = async (from: string, values: unknown[]): Promise<number> =>
    Number((await connection.query(`SELECT COUNT(*) AS n ${from}`, values))[0]?.n ?? 0);

  return {
    async listPendingOf(principal) {
      const rows = await connection.query(
        `SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals} WHERE status = 'pending' AND customer = $1
         UNION SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals} WHERE status = 'pending'
           AND session IN (SELECT id FROM ${t.sessions} WHERE principal = $1)
         ORDER BY created_at, id`,
        [principal],
      );
      return rows.map((row) => toApproval(codec, row));
    },

    async runsToErase(principal) {
      return (await theirs(connection.query, principal, '')).runs;
    },

    async erasePrincipal({ principal, at, audit }): Promise<ErasureCounts> {
      return connection.transaction(async (q) => {
        const { sessions, found, runs } = await theirs(q, principal, ' FOR UPDATE');
        const runRequests = column(
          await q(`SELECT id FROM ${t.approvals} WHERE run = ANY($1::text[])`, [runs]),
          'id',
        );
        const requests = [...new Set([...column(found, 'id'), ...runRequests])];
        const auditSessions = [...sessions, ...runs.map((id) => `wf.${id}`)];
        const auditEntries =
          (await changes(
            q,
            `UPDATE ${t.audit} SET data = $1, erased_at = $2 WHERE erased_at IS NULL AND session = ANY($3::text[])`,
            [ERASED_DATA, at, auditSessions],
          )) +
          (await changes(
            q,
            `UPDATE ${t.audit} SET data = $1, erased_at = $2 WHERE erased_at IS NULL AND request_id = ANY($3::text[])`,
            [ERASED_DATA, at, requests],
          ));
        const deliveries = await changes(q, `DELETE FROM ${t.deliveries} WHERE id = ANY($1::text[])`, [
          requests.flatMap(deliveryIdsOf),
        ]);
        const ofRuns = await removeRuns(q, runs);
        const ofRequests = await removeRequests(q, requests);
        const ofSessions = await removeSessions(q, sessions);
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
        await appendAudit(q, audit?.(counts), at);
        return counts;
      });
    },

    async purgeBatch(batch: PurgeBatch): Promise<PurgeCounts> {
      const { before, at, nowMs } = batch;
      if (batch.dryRun) {
        return {
          sessions:
            before.sessions === undefined ? 0 : await count(FINISHED_SESSIONS, [before.sessions, nowMs]),
          runs: before.runs === undefined ? 0 : await count(ENDED_RUNS, [before.runs]),
          requests: before.requests === undefined ? 0 : await count(DECIDED_REQUESTS, [before.requests]),
          auditEntries: before.audit === undefined ? 0 : await count(READABLE_AUDIT, [before.audit]),
        };
      }
      const limit = Math.max(1, Math.trunc(batch.limit));
      return connection.transaction(async (q) => {
        // SKIP LOCKED: rows another instance is purging (or a run is writing) are left for later.
        const sessions =
          before.sessions === undefined
            ? []
            : column(
                await q(
                  `SELECT s.id ${FINISHED_SESSIONS} ORDER BY s.updated_at, s.id LIMIT ${limit} FOR UPDATE OF s SKIP LOCKED`,
                  [before.sessions, nowMs],
                ),
                'id',
              );
        const runs =
          before.runs === undefined
            ? []
            : column(
                await q(
                  `SELECT id ${ENDED_RUNS} ORDER BY updated_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
                  [before.runs],
                ),
                'id',
              );
        const requests =
          before.requests === undefined
            ? []
            : column(
                await q(
                  `SELECT a.id ${DECIDED_REQUESTS} ORDER BY a.created_at, a.id LIMIT ${limit} FOR UPDATE OF a SKIP LOCKED`,
                  [before.requests],
                ),
                'id',
              );
        const seqs =
          before.audit === undefined
            ? []
            : (
                await q(
                  `SELECT seq ${READABLE_AUDIT} ORDER BY at, seq LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
                  [before.audit],
                )
              ).map((row) => String(row.seq));
        await removeSessions(q, sessions);
        await removeRuns(q, runs);
        const ofRequests = await removeRequests(q, requests);
        const auditEntries = await changes(
          q,
          `UPDATE ${t.audit} SET data = $1, erased_at = $2 WHERE erased_at IS NULL AND seq = ANY($3::bigint[])`,
          [ERASED_DATA, at, seqs],
        );
        const counts = {
          sessions: sessions.length,
          runs: runs.length,
          requests: ofRequests.requests,
          auditEntries,
        };
        // Last write of the transaction (the audit head's lock is held until COMMIT).
        if (Object.values(counts).some((n) => n > 0)) await appendAudit(q, batch.audit?.(counts), at);
        return counts;
      });
    },
  };
}
