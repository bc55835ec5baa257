import type { Decision } from '../../core/approval.ts';
import type { AuditEntry } from '../../core/audit.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import { storedText } from '../../core/storable-text.ts';
import { decisionScope, executionScope, sessionScope } from '../../crypto/scopes.ts';
import type { Liveness } from '../../liveness/liveness.ts';
import { localLiveness } from '../../liveness/local/local-liveness.ts';
import { createPostgresLiveness } from '../../liveness/postgres/postgres-liveness.ts';
import { serverClock } from '../../liveness/postgres/server-clock.ts';
import { decisionNeedsUnexpired } from '../approval-rules.ts';
import { auditCursor } from '../audit-cursor.ts';
import type { CheckpointStore } from '../checkpoint-store.ts';
import { jsonCodec, type PayloadCodec } from '../codec.ts';
import { assembleStats, assertStatsQuery } from '../decision-stats.ts';
import { assertExecutionFilter } from '../execution-page.ts';
import { guardStore } from '../guard.ts';
import { holdsLease, holdsLeaseSql } from '../lease-rules.ts';
import type { DataKeys } from '../ports/data-keys.ts';
import type { SchemaVersion } from '../ports/schema-version.ts';
import type { Outbox } from '../ports/server/outbox.ts';
import type { WebSessionStore } from '../ports/server/web-session-store.ts';
import type { TextSearchState, TextSearchStatus } from '../ports/text-search-state.ts';
import { pageOf, planPage } from '../request-page.ts';
import { decidedValues } from '../row-values.ts';
import { APPROVAL_COLUMNS, EXECUTION_COLUMNS, RULE_COLUMNS, SESSION_COLUMNS } from '../sql/columns.ts';
import { decisionStatsSql, toDecidedGroup, toDecisionTimes, toReason } from '../sql/decision-stats-sql.ts';
import { executionPageSql } from '../sql/execution-page-sql.ts';
import { requestPageSql } from '../sql/request-page-sql.ts';
import { toApproval, toExecution, toFence, toLease, toRule, toRunStart, toSession } from '../sql/rows.ts';
import type { Tables } from '../sql/tables.ts';
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
  executionNotFound,
  executionStartRefused,
  leaseLost,
  ruleOutsideSession,
  sessionExists,
  sessionNotFound,
  staleStep,
} from '../store-errors.ts';
import { adoptLegacyRequests } from './adopt-legacy-requests.ts';
import { coalescedReads } from './coalesced-reads.ts';
import { createConnection, openPool, type Query, type Row } from './connection.ts';
import {
  type AuditSink,
  createGroupCommit,
  oneStatement,
  type Write,
  type WriteShape,
} from './group-commit.ts';
import { jsonParameter } from './json-parameter.ts';
import { keyLoadingConnection } from './key-loading-connection.ts';
import { loadMigrations, migrate } from './migrate.ts';
import { postgresPageDialect } from './page-requests.ts';
import { describeTarget } from './pg-errors.ts';
import { type PoolOptions, poolMax } from './pool-options.ts';
import { createPostgresAppState } from './postgres-app-state.ts';
import { createPostgresCheckpoints } from './postgres-checkpoints.ts';
import { createPostgresDataKeys } from './postgres-data-keys.ts';
import { createPostgresErasure } from './postgres-erasure.ts';
import { createPostgresOutbox } from './postgres-outbox.ts';
import { createPostgresRequestTimers } from './postgres-request-timers.ts';
import { createPostgresWebSessions } from './postgres-web-sessions.ts';
import { createRowQueries, first } from './row-queries.ts';
import { createRowWriters } from './row-writers.ts';
import { assertSchemaName, DEFAULT_SCHEMA, quoteIdentifier, tablesIn } from './schema-name.ts';
import { ensureTextSearch } from './text-search.ts';

export interface PostgresStoreOptions {
  /** postgres://USER:PASSWORD@HOST:PORT/DATABASE, with any option pg reads (sslmode, …). */
  connectionString: string;
  /** The schema holding the store's tables (default `countersign`); created if missing. */
  schema?: string;
  pool?: PoolOptions;
  codec?: PayloadCodec;
  /**
   * Cross-host liveness (default on): the process holds a session advisory lock on one
   * connection of its own for as long as it lives, so a process on another host can take the
   * leases of one that died over at once instead of after their term
   * (src/liveness/postgres/postgres-liveness.ts). `{ connectionString }` holds it through
   * another URL (a direct one, when the store's goes through a transaction-pooling proxy);
   * `false` turns it off: leases of dead processes elsewhere then lapse after their term
   * (which still runs on the server's clock).
   */
  liveness?: boolean | { connectionString: string };
}

/**
 * Also where workflow runs live (migration 003, postgres-checkpoints.ts), like the SQLite
 * store, and the server's outbox and sign-in store (`deliveries`, `web_sessions`):
 * `createServer` uses them when given this store.
 */
export interface PostgresStore
  extends Store,
    CheckpointStore,
    Outbox,
    WebSessionStore,
    SchemaVersion,
    DataKeys,
    TextSearchStatus {
  readonly kind: 'postgres';
  /** Workflow writes link their audit events onto this store's chain in their own transaction. */
  readonly keepsAudit: true;
  readonly schema: string;
  /** Whether the holder of a lease is alive, across the hosts sharing this database. */
  readonly liveness: Liveness;
}

/** Exported so a test can ask PostgreSQL for the plans: ranges of the index of decided rows. */
export function postgresStatsSql(t: Pick<Tables, 'approvals'>) {
  return decisionStatsSql({
    approvals: t.approvals,
    since: '$1::text',
    until: '$2::text',
    msToDecision:
      'CAST(ROUND(EXTRACT(EPOCH FROM (decided_at::timestamptz - created_at::timestamptz)) * 1000) AS bigint)',
    indexHint: '',
  });
}

/** Exported so a test can ask PostgreSQL for its plan: it must use the partial index `approvals_due`. */
export function dueRequestsSql(t: Pick<Tables, 'approvals'>, ofKind: boolean): string {
  return `SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals}
    WHERE status = 'pending' AND expires_at <= $1${ofKind ? ' AND kind = $3' : ''}
    ORDER BY expires_at, id LIMIT $2`;
}

/**
 * The Store on PostgreSQL, shared by any number of processes. Every method is one statement
 * or one short transaction; nothing is held between calls. Compare-and-sets (decide, lease,
 * ledger start, step fencing) are single conditional statements, so under READ COMMITTED a
 * second writer waits for the first and then re-checks the condition against what it wrote.
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const schema = assertSchemaName(options.schema ?? DEFAULT_SCHEMA);
  const codec = options.codec ?? jsonCodec;
  const target = describeTarget(options.connectionString, schema);
  const connection = keyLoadingConnection(
    createConnection(await openPool(options.connectionString, options.pool ?? {}), target),
    codec,
  );
  let textSearch: TextSearchState;
  try {
    await migrate(connection, schema, target);
    await adoptLegacyRequests(connection, schema, codec);
    textSearch = await ensureTextSearch(connection, schema);
  } catch (error) {
    await connection.close();
    throw error;
  }
  const t = tablesIn(schema);
  const pageDialect = postgresPageDialect(t.approvals);
  const statsSql = postgresStatsSql(t);
  const { insertMessages, insertApproval, insertExecution, insertRule, appendAudit, linkAudit } =
    createRowWriters(t, codec);
  const { query } = connection;
  const group = createGroupCommit(connection, linkAudit, poolMax(options.pool));
  const liveness =
    options.liveness === false
      ? // No tokens, but still the server's clock for lease terms: other hosts share the store.
        { ...localLiveness, now: serverClock(query) }
      : createPostgresLiveness({
          connectionString:
            typeof options.liveness === 'object'
              ? options.liveness.connectionString
              : options.connectionString,
          query,
        });

  /**
   * Every write goes through the group commit: alone it is one transaction (or, `single`, one
   * autocommit statement with no BEGIN/COMMIT round trips); with other requests' writes in
   * flight it shares their transaction and its one audit link and COMMIT.
   */
  function write<T>(shape: WriteShape, work: Write<T>): Promise<T> {
    return group.run(work, shape);
  }

  const {
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
  } = createRowQueries(t, codec);

  // The fenced step: the UPDATE only matches while `leaseOwner` holds the lease and the count
  // is the one the step was computed against, and the messages are inserted only from its
  // RETURNING row. A concurrent commit makes this one wait on the row lock and then re-check
  // the condition against the committed row, so of two racing steps exactly one matches.
  //
  // A step that finishes a ledger row ($9: the last approved call's result, written with the
  // tool message) does that in the same statement: the session is updated only if the finish
  // matched, and `finished` says whether it did (else nothing was written; the caller reads the
  // ledger row to say why).
  const commitSql = `
    WITH f AS (
      UPDATE ${t.executions} SET status = $10::text, result = $11::text, finished_at = $12::text
      WHERE $9::boolean AND request_id = $13::text AND status IN ('started', 'unknown')
      RETURNING 1
    ), s AS (
      UPDATE ${t.sessions}
      SET message_count = $3::integer + cardinality($5::text[]),
          updated_at = $4::text,
          batch = CASE WHEN $6::boolean THEN $7::text ELSE batch END,
          lease_owner = CASE WHEN $8::boolean THEN NULL ELSE lease_owner END,
          lease_until = CASE WHEN $8::boolean THEN 0 ELSE lease_until END
      WHERE id = $1::text AND lease_owner = $2::text AND message_count = $3::integer
        AND (NOT $9::boolean OR EXISTS (SELECT 1 FROM f))
      RETURNING ${SESSION_COLUMNS}
    ), added AS (
      INSERT INTO ${t.messages} (session, seq, at, body)
      SELECT s.id, $3::integer + o.n - 1, $4::text, o.body
      FROM s CROSS JOIN unnest($5::text[]) WITH ORDINALITY AS o(body, n)
    )
    SELECT EXISTS (SELECT 1 FROM f) AS finished, s.* FROM (VALUES (1)) AS one (x) LEFT JOIN s ON true`;

  // The decision's compare-and-set and the session's lease in one statement: the lease is
  // taken only on the session of a request this statement decided (same rule as takeLease).
  // With $12 (loadRun) and the lease taken, the same statement also hands back what the run
  // that follows reads first: the session's messages and the request's ledger row.
  const decideText = (unexpired: boolean) => `
    WITH d AS (
      UPDATE ${t.approvals} SET status = $2::text, decision = $3::text,
        decided_at = $9::text, decided_by = $10::text, decided_kind = $11::text
      WHERE id = $1::text AND status = 'pending'${unexpired ? ' AND expires_at > $4::text' : ' AND $4::text IS NULL'}
      RETURNING ${APPROVAL_COLUMNS}
    ), l AS (
      UPDATE ${t.sessions} SET lease_owner = $6::text, lease_until = $7::bigint
      WHERE $5::boolean AND id = (SELECT session FROM d)
        AND (lease_owner IS NULL OR lease_until < $8::bigint OR lease_owner = $6::text)
      RETURNING id
    )
    SELECT d.*, l.id IS NOT NULL AS leased, h.run_seqs, h.run_ats, h.run_bodies, x.run_execution
    FROM d LEFT JOIN l ON true
    LEFT JOIN LATERAL (
      SELECT array_agg(m.seq ORDER BY m.seq) AS run_seqs, array_agg(m.at ORDER BY m.seq) AS run_ats,
        array_agg(m.body ORDER BY m.seq) AS run_bodies
      FROM ${t.messages} m WHERE $12::boolean AND m.session = l.id
    ) h ON true
    LEFT JOIN LATERAL (
      SELECT row_to_json(e) AS run_execution FROM ${t.executions} e
      WHERE $12::boolean AND l.id IS NOT NULL AND e.request_id = d.id
    ) x ON true`;
  const decideSql = decideText(false);
  const decideUnexpiredSql = decideText(true);

  // Requests with their sessions in one statement (each session as JSON beside its request's
  // columns, whose names it shares), for every id read in the same turn (coalesced-reads.ts).
  const approvalsWithSessionSql = `
    SELECT a.*, (SELECT row_to_json(s) FROM (SELECT ${SESSION_COLUMNS} FROM ${t.sessions} WHERE id = a.session) s)
      AS session_row
    FROM (SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals}
      WHERE id = ANY (ARRAY(SELECT json_array_elements_text($1::json)))) a`;
  const approvalWithSession = coalescedReads(
    async (ids: readonly string[]) =>
      new Map(
        (await query(approvalsWithSessionSql, [jsonParameter(ids)])).map((row) => [row.id as string, row]),
      ),
    // As the row's id comes back (coalescedReads).
    (id) => storedText(id),
  );

  // The ledger's compare-and-set: only the first start of a request inserts a row, and only
  // into a session that exists.
  const startText = (condition: string) => `
    INSERT INTO ${t.executions} (${EXECUTION_COLUMNS})
    SELECT $1, $2, $3, $4, $5, $6, 'started', NULL, 1, $7, NULL
    WHERE EXISTS (SELECT 1 FROM ${t.sessions} WHERE id = $2${condition})
    ON CONFLICT (request_id) DO NOTHING RETURNING ${EXECUTION_COLUMNS}`;
  const startSql = startText('');
  // Fenced (ExecutionStart.lease): and only while $8 holds the session's lease at $9
  // (lease-rules.ts). FOR SHARE makes the check exact under READ COMMITTED: a takeover that
  // committed after this statement's snapshot is waited for or found (the row is re-read at
  // its newest version and the condition checked again), and one that comes later waits until
  // this transaction has committed the row, so it finds it. The lock is the session row's, for
  // this one short transaction; it blocks only writes to that session.
  const fencedStartSql = startText(` AND ${holdsLeaseSql('$8::text', '$9::bigint')} FOR SHARE`);

  /** Why a fenced step matched nothing, for the error; read after the fact, so only a diagnosis. */
  async function refusal(q: Query, step: StepCommit): Promise<Error> {
    const row = first(
      await q(`SELECT lease_owner, message_count FROM ${t.sessions} WHERE id = $1`, [step.session]),
    );
    if (row === undefined) return sessionNotFound(step.session);
    const { owner, messageCount } = toFence(row, step.session);
    if (owner !== step.leaseOwner) return leaseLost(step.session, owner, step.leaseOwner);
    if (messageCount !== step.expectedMessageCount) {
      return staleStep(step.session, messageCount, step.expectedMessageCount);
    }
    return leaseLost(step.session, owner, step.leaseOwner);
  }

  async function readLease(q: Query, session: string): Promise<LeaseInfo | null> {
    const row = first(await q(`SELECT lease_owner, lease_until FROM ${t.sessions} WHERE id = $1`, [session]));
    return row === undefined ? null : toLease(row, session);
  }

  async function takeLease(q: Query, request: LeaseRequest): Promise<boolean> {
    const rows = await q(
      `UPDATE ${t.sessions} SET lease_owner = $1::text, lease_until = $2::bigint
       WHERE id = $3::text
         AND (lease_owner IS NULL OR lease_until < $4::bigint OR lease_owner = $1::text OR lease_owner = $5::text)
       RETURNING 1 AS ok`,
      [request.owner, request.untilMs, request.session, request.nowMs, request.takeOverFrom ?? null],
    );
    return rows.length > 0;
  }

  /** `scope`: the execution's session when the caller knows it, else found from the request id. */
  async function finishIn(
    q: Query,
    audit: AuditSink,
    requestId: string,
    finish: ExecutionFinish,
    scope = executionScope(requestId),
  ): Promise<ExecutionRecord> {
    const row = first(
      await q(
        `UPDATE ${t.executions} SET status = $2, result = $3, finished_at = $4
         WHERE request_id = $1 AND status IN ('started', 'unknown') RETURNING ${EXECUTION_COLUMNS}`,
        [
          requestId,
          finish.status,
          finish.result === null ? null : codec.encode(finish.result, scope),
          finish.at,
        ],
      ),
    );
    if (row === undefined) {
      const existing = await executionById(q, requestId);
      if (existing === null) throw executionNotFound(requestId);
      throw executionAlreadyFinished(requestId, existing.status);
    }
    audit(finish.audit, finish.at);
    return toExecution(codec, row);
  }

  const store: PostgresStore = {
    kind: 'postgres',
    textSearch,
    schema,
    keepsAudit: true,
    ...createPostgresCheckpoints(connection, schema, codec, group, insertApproval),
    ...createPostgresErasure(connection, schema, t, codec, appendAudit),
    ...createPostgresAppState(query, t.state, codec, (statement) => write('single', statement)),
    ...createPostgresRequestTimers(connection, t, codec, group),
    ...createPostgresOutbox(query, t, codec),
    ...createPostgresDataKeys(query, `${quoteIdentifier(schema)}.data_keys`),
    ...createPostgresWebSessions(query, t),

    async ensureSession(input) {
      const inserted = first(
        await query(
          `INSERT INTO ${t.sessions} (id, agent, principal, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $4) ON CONFLICT (id) DO NOTHING RETURNING ${SESSION_COLUMNS}`,
          [input.id, input.agent, input.principal, input.at],
        ),
      );
      if (inserted !== undefined) return toSession(codec, inserted);
      const existing = await sessionById(query, input.id);
      if (existing === null) throw sessionNotFound(input.id);
      return existing;
    },

    async getSession(id) {
      return sessionById(query, id);
    },

    async listSessions() {
      return listSessions(query);
    },

    async loadMessages(session) {
      return messagesOf(query, session);
    },

    async listStalledSessions(stalled) {
      return stalledSessions(query, stalled);
    },

    async commitStep(step: StepCommit) {
      const approvals = step.approvals ?? [];
      const finishes = step.finishes ?? [];
      // One statement unless it raises requests or finishes more than one call (rare).
      const shape: WriteShape =
        approvals.length > 0 || finishes.length > 1
          ? 'many'
          : (step.audit ?? []).length === 0 && finishes.length === 0
            ? 'single'
            : 'one';
      const scope = sessionScope(step.session);
      // The last finish rides in the step's statement; any before it (rare) go first.
      const last = finishes.at(-1);
      return write(shape, async (q, audit) => {
        for (const finish of finishes.slice(0, -1)) await finishIn(q, audit, finish.requestId, finish, scope);
        const row = first(
          await q(commitSql, [
            step.session,
            step.leaseOwner,
            step.expectedMessageCount,
            step.at,
            step.append.map((message) => codec.encode(message, scope)),
            step.batch !== undefined,
            step.batch === undefined || step.batch === null ? null : codec.encode(step.batch, scope),
            step.releaseLease === true,
            last !== undefined,
            last?.status ?? null,
            last === undefined || last.result === null ? null : codec.encode(last.result, scope),
            last?.at ?? null,
            last?.requestId ?? null,
          ]),
        );
        if (last !== undefined && row?.finished !== true) {
          const existing = await executionById(q, last.requestId);
          if (existing === null) throw executionNotFound(last.requestId);
          throw executionAlreadyFinished(last.requestId, existing.status);
        }
        if (row === undefined || row.id === null) throw await refusal(q, step);
        if (last !== undefined) audit(last.audit, last.at);
        for (const request of approvals) await insertApproval(q, request);
        audit(step.audit, step.at);
        return toSession(codec, row);
      });
    },

    async acquireLease(request: LeaseRequest) {
      return takeLease(query, request);
    },

    async renewLease(renewal) {
      const rows = await query(
        `UPDATE ${t.sessions} SET lease_until = $1::bigint
         WHERE id = $2::text AND lease_owner = $3::text RETURNING 1 AS ok`,
        [renewal.untilMs, renewal.session, renewal.owner],
      );
      return rows.length > 0;
    },

    async releaseLease(session, owner) {
      await query(
        `UPDATE ${t.sessions} SET lease_owner = NULL, lease_until = 0 WHERE id = $1 AND lease_owner = $2`,
        [session, owner],
      );
    },

    async getLease(session): Promise<LeaseInfo | null> {
      return readLease(query, session);
    },

    async getApproval(id) {
      return approvalById(query, id);
    },

    async getApprovalWithSession(id) {
      const row = await approvalWithSession(id);
      if (row === undefined) return null;
      const request = toApproval(codec, row);
      return { request, session: row.session_row === null ? null : toSession(codec, row.session_row as Row) };
    },

    async listApprovals(filter: ApprovalFilter = {}) {
      return approvalsWhere(query, [
        ['status', filter.status],
        ['session', filter.session],
        ['tool', filter.tool],
        ['kind', filter.kind],
        ['run', filter.run],
      ]);
    },

    async countPending() {
      // Served by the partial index approvals_due (pending rows only).
      const rows = await query(`SELECT COUNT(*)::int AS n FROM ${t.approvals} WHERE status = 'pending'`, []);
      return Number((rows[0] as { n: number } | undefined)?.n ?? 0);
    },

    async decisionStats(stats) {
      assertStatsQuery(stats);
      const window = [stats.since, stats.until];
      const [groups, times, reasons] = await Promise.all([
        query(statsSql.groups, window),
        query(statsSql.times, window),
        query(statsSql.reasons, window),
      ]);
      return assembleStats(
        stats,
        groups.map(toDecidedGroup),
        toDecisionTimes(times),
        reasons.map((row) => toReason(codec, row)),
      );
    },

    async pageRequests(pageQuery) {
      const plan = planPage(pageQuery);
      const statements = requestPageSql(pageDialect, plan);
      // A text or customer needle is planned with its value every time: rare, the planner
      // takes the trigram indexes; common, the ordered walk (migration 016).
      const options = {
        prepared: plan.partial.text === undefined && plan.partial.customer === undefined,
      };
      const [rows, counted] = await Promise.all([
        query(statements.page.text, statements.page.values, options),
        statements.count === null ? null : query(statements.count.text, statements.count.values, options),
      ]);
      const total = counted === null ? undefined : Number((counted[0] as { n: unknown } | undefined)?.n ?? 0);
      return pageOf(
        rows.map((row) => toApproval(codec, row)),
        plan,
        total,
      );
    },

    async listDue(due) {
      const rows = await query(dueRequestsSql(t, due.kind !== undefined), [
        due.at,
        due.limit,
        ...(due.kind === undefined ? [] : [due.kind]),
      ]);
      return rows.map((row) => toApproval(codec, row));
    },

    async decide(id, decision: Decision, audit, options = {}): Promise<DecideResult> {
      const { rule, lease } = options;
      const unexpired = decisionNeedsUnexpired(decision);
      const values = [
        id,
        decision.verdict,
        codec.encode(decision, decisionScope(id)),
        unexpired ? decision.at : null,
        lease !== undefined,
        lease?.owner ?? null,
        lease?.untilMs ?? 0,
        lease?.nowMs ?? 0,
        ...decidedValues({ decision }),
        lease !== undefined && options.loadRun === true,
      ];
      // A rule is a second statement after the decision's.
      const shape: WriteShape =
        rule !== undefined ? 'many' : (audit ?? []).length === 0 && lease === undefined ? 'single' : 'one';
      const won = await write(shape, async (q, link) => {
        const row = first(await q(unexpired ? decideUnexpiredSql : decideSql, values));
        if (row === undefined) return null;
        const request = toApproval(codec, row);
        if (rule !== undefined) {
          // Throwing here rolls the decision back too: a decision must not stand without the
          // rule it was given with.
          if (rule.session !== request.session) {
            throw ruleOutsideSession(rule.id, rule.session, id, request.session);
          }
          await insertRule(q, rule);
        }
        link(audit, decision.at);
        const leased = row.leased === true;
        return {
          request,
          leased,
          run: leased && options.loadRun === true ? toRunStart(codec, row, request) : undefined,
        };
      });
      // A lost compare-and-set reads the row afterwards: a decided request never changes again.
      if (won === null) return { won: false, request: await approvalById(query, id) };
      return { won: true, request: won.request, leased: won.leased, ...(won.run ? { run: won.run } : {}) };
    },

    async recordApproval(id, update, audit): Promise<ApprovalUpdateResult> {
      // The compare-and-set on the revision; RETURNING hands back the row it wrote.
      const cas = `UPDATE ${t.approvals} SET partial_approvals = $2, pending_edit = $3, required_role = $4,
           approvals_needed = $5, revision = revision + 1
         WHERE id = $1 AND status = 'pending' AND revision = $6 AND expires_at > $7
         RETURNING ${APPROVAL_COLUMNS}`;
      const values = [
        id,
        update.approvals.length === 0 ? null : codec.encode(update.approvals, decisionScope(id)),
        update.edit === null ? null : codec.encode(update.edit, decisionScope(id)),
        update.requiredRole,
        update.approvalsNeeded,
        update.revision,
        update.at,
      ];
      const won = await write(oneStatement(audit), async (q, link) => {
        const row = first(await q(cas, values));
        if (row === undefined) return null;
        link(audit, update.at);
        return toApproval(codec, row);
      });
      return won === null
        ? { won: false, request: await approvalById(query, id) }
        : { won: true, request: won };
    },

    async listRules(filter: { session?: string; includeRevoked?: boolean } = {}) {
      return rulesOf(query, filter);
    },

    async getRule(id) {
      return ruleById(query, id);
    },

    async revokeRule(id, by, at, audit): Promise<StandingRule | null> {
      const revoked = await write(oneStatement(audit), async (q, link) => {
        const row = first(
          await q(
            `UPDATE ${t.rules} SET revoked_at = $3, revoked_by = $2
             WHERE id = $1 AND revoked_at IS NULL RETURNING ${RULE_COLUMNS}`,
            [id, by, at],
          ),
        );
        if (row === undefined) return null;
        link(audit, at);
        return toRule(row);
      });
      // Unknown, or revoked before: either way what is stored now is the answer.
      return revoked ?? ruleById(query, id);
    },

    async startExecution(start: ExecutionStart, audit): Promise<ExecutionStartResult> {
      const { lease } = start;
      const created = await write(oneStatement(audit), async (q, link) => {
        const row = first(
          await q(lease === undefined ? startSql : fencedStartSql, [
            start.requestId,
            start.session,
            start.callId,
            start.tool,
            codec.encode(start.args, sessionScope(start.session)),
            start.idempotencyKey,
            start.at,
            ...(lease === undefined ? [] : [lease.owner, lease.nowMs]),
          ]),
        );
        if (row === undefined) return null;
        link(audit, start.at);
        return toExecution(codec, row);
      });
      if (created !== null) return { created: true, record: created };
      // Nothing inserted: a lease not held (checked first, as the statement does), a row
      // already there, or no session. Read after the fact, so only a diagnosis.
      if (lease !== undefined) {
        const held = await readLease(query, start.session);
        if (held === null) throw sessionNotFound(start.session);
        if (!holdsLease(held, lease))
          throw executionStartRefused(start.requestId, start.session, held, lease);
      }
      const existing = await executionById(query, start.requestId);
      if (existing !== null) return { created: false, record: existing };
      // The statement refused a fenced start that a later read found held: only a lease
      // lost and taken back by the same owner in between can do that; refuse it all the same.
      if (lease !== undefined) {
        throw executionStartRefused(
          start.requestId,
          start.session,
          await readLease(query, start.session),
          lease,
        );
      }
      throw sessionNotFound(start.session);
    },

    async finishExecution(requestId, finish: ExecutionFinish) {
      return write(oneStatement(finish.audit), (q, audit) => finishIn(q, audit, requestId, finish));
    },

    async getExecution(requestId) {
      return executionById(query, requestId);
    },

    async listExecutions(filter: ExecutionFilter = {}) {
      assertExecutionFilter(filter);
      const page = executionPageSql(t.executions, (index) => `$${index}`, filter);
      return (await query(page.text, page.values)).map((row) => toExecution(codec, row));
    },

    async appendAudit(events, at) {
      if (events.length === 0) return;
      await write('one', async (_q, audit) => audit(events, at));
    },

    async listAudit(filter?: AuditQuery): Promise<AuditEntry[]> {
      return auditOf(query, auditCursor(filter));
    },

    async schemaVersion() {
      const rows = await query(`SELECT max(version) AS version FROM ${quoteIdentifier(schema)}.migrations`);
      return { current: Number(rows[0]?.version ?? 0), known: loadMigrations().length };
    },

    async lastAuditSeq(): Promise<number> {
      // The chain's tail row: one row, read without waiting for a writer's lock (MVCC).
      const rows = await query(`SELECT seq FROM ${t.auditHead}`);
      return Number(rows[0]?.seq ?? 0);
    },

    async exportSession(id): Promise<SessionSnapshot | null> {
      return connection.snapshotRead(async (q) => {
        const session = await sessionById(q, id);
        if (session === null) return null;
        // Rules stay behind: they are trust granted in this store and are granted again after a move.
        return {
          session,
          messages: await messagesOf(q, id),
          approvals: await approvalsWhere(q, [['session', id]]),
          executions: await executionsWhere(q, [['session', id]]),
        };
      });
    },

    async importSession(snapshot: SessionSnapshot, audit) {
      const { session } = snapshot;
      await connection.transaction(async (q) => {
        const inserted = await q(
          `INSERT INTO ${t.sessions} (${SESSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (id) DO NOTHING RETURNING id`,
          sessionValues(codec, session),
        );
        if (inserted.length === 0) throw sessionExists(session.id);
        await insertMessages(q, session.id, snapshot.messages);
        for (const request of snapshot.approvals) await insertApproval(q, request);
        for (const record of snapshot.executions) await insertExecution(q, record);
        await appendAudit(q, audit, new Date().toISOString());
      });
    },

    liveness,

    async close() {
      // The lock first: a store closed is a process done with its leases.
      await liveness.close();
      await connection.close();
    },
  };
  return guardStore(store);
}
