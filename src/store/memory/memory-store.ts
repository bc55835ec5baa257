import type { ApprovalRequest } from '../../core/approval.ts';
import { AUDIT_GENESIS, type AuditEntry, type AuditEvent, sealAuditEntry } from '../../core/audit.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import type { StoredMessage } from '../../core/messages.ts';
import type { SessionRecord } from '../../core/session.ts';
import { storedText } from '../../core/storable-text.ts';
import {
  approvalUpdateApplies,
  assertWritable,
  decisionNeedsUnexpired,
  dueRequests,
  matchesFilter,
  withApprovalUpdate,
} from '../approval-rules.ts';
import { auditCursor } from '../audit-cursor.ts';
import { assertStatsQuery, statsOfRows } from '../decision-stats.ts';
import { executionsInMemory } from '../execution-page.ts';
import { guardStore } from '../guard.ts';
import { holdsLease } from '../lease-rules.ts';
import type { DataKeys } from '../ports/data-keys.ts';
import type { Outbox } from '../ports/server/outbox.ts';
import type { WebSessionStore } from '../ports/server/web-session-store.ts';
import { pageInMemory } from '../request-page.ts';
import { DEFAULT_STALLED_LIMIT } from '../stalled-sessions.ts';
import type { ExecutionFinish, LeaseRequest, StalledSession, StandingRule, Store } from '../store.ts';
import {
  approvalExists,
  executionAlreadyFinished,
  executionExists,
  executionNotFound,
  executionStartRefused,
  leaseLost,
  ruleExists,
  ruleOutsideSession,
  sessionExists,
  sessionNotFound,
  staleStep,
} from '../store-errors.ts';
import { claimApplies, nudgeApplies, nudged, nudgesDue } from '../timer-rules.ts';
import { createMemoryAppState } from './memory-app-state.ts';
import { createMemoryDataKeys } from './memory-data-keys.ts';
import { createMemoryErasure } from './memory-erasure.ts';
import { createMemoryOutbox } from './memory-outbox.ts';
import { createMemoryWebSessionStore } from './memory-web-session-store.ts';

/**
 * The memory Store, with the server's outbox and sign-ins beside it (as the SQL stores keep
 * theirs): servers sharing one memory store share those too, as they would a database.
 */
export interface MemoryStore extends Store, Outbox, WebSessionStore, DataKeys {
  readonly kind: 'memory';
}

interface SessionEntry {
  record: SessionRecord;
  messages: StoredMessage[];
  leaseOwner: string | null;
  leaseUntil: number;
}

// Every value is cloned on the way in and out, so a caller holding a returned object can
// never change what the store holds, just as with a real database.
const copy = <T>(value: T): T => structuredClone(value);

/** Orders like SQL's `ORDER BY first, second` on text columns. */
function orderBy<T>(keys: (item: T) => readonly [string, string]): (a: T, b: T) => number {
  return (a, b) => {
    const [a1, a2] = keys(a);
    const [b1, b2] = keys(b);
    if (a1 !== b1) return a1 < b1 ? -1 : 1;
    if (a2 !== b2) return a2 < b2 ? -1 : 1;
    return 0;
  };
}

const byCreated = orderBy((request: ApprovalRequest) => [request.createdAt, request.id]);
const byStarted = orderBy((record: ExecutionRecord) => [record.startedAt, record.requestId]);
const bySessionCreated = orderBy((record: SessionRecord) => [record.createdAt, record.id]);
const byRuleCreated = orderBy((rule: StandingRule) => [rule.createdAt, rule.id]);
const byUpdated = orderBy((session: StalledSession) => [session.updatedAt, session.id]);

/**
 * A process-local Store for tests, demos and `COUNTERSIGN_STORE=memory:`, guarded (guard.ts).
 * Each method checks everything before changing anything, which makes it as all-or-nothing as
 * a transaction (JavaScript runs it without interleaving).
 */
export function createMemoryStore(): MemoryStore {
  const sessions = new Map<string, SessionEntry>();
  const approvals = new Map<string, ApprovalRequest>();
  const executions = new Map<string, ExecutionRecord>();
  const rules = new Map<string, StandingRule>();
  const audit: AuditEntry[] = [];

  function requireSession(id: string): SessionEntry {
    const entry = sessions.get(id);
    if (entry === undefined) throw sessionNotFound(id);
    return entry;
  }

  function takeLease(request: LeaseRequest): boolean {
    const entry = sessions.get(request.session);
    if (entry === undefined) return false;
    const free =
      entry.leaseOwner === null ||
      entry.leaseUntil < request.nowMs ||
      entry.leaseOwner === request.owner ||
      entry.leaseOwner === request.takeOverFrom;
    if (!free) return false;
    entry.leaseOwner = request.owner;
    entry.leaseUntil = request.untilMs;
    return true;
  }

  function checkFinishable(requestId: string): void {
    const existing = executions.get(requestId);
    if (existing === undefined) throw executionNotFound(requestId);
    if (existing.status !== 'started' && existing.status !== 'unknown') {
      throw executionAlreadyFinished(requestId, existing.status);
    }
  }

  /** Call after checkFinishable. */
  function finishRecord(requestId: string, finish: ExecutionFinish): ExecutionRecord {
    const record: ExecutionRecord = {
      ...executions.get(requestId)!,
      status: finish.status,
      result: copy(finish.result),
      finishedAt: finish.at,
    };
    executions.set(requestId, record);
    appendAuditEntries(finish.audit, finish.at);
    return record;
  }

  function appendAuditEntries(events: readonly AuditEvent[] | undefined, at: string): void {
    let prevHash = audit.at(-1)?.hash ?? AUDIT_GENESIS;
    for (const event of events ?? []) {
      const base = {
        seq: audit.length + 1,
        at,
        kind: event.kind,
        // As a database stores them (storedText), so every backend reads back the same.
        session: storedText(event.session),
        requestId: storedText(event.requestId),
        actor: storedText(event.actor),
        data: copy(event.data),
      };
      const { dataHash, hash } = sealAuditEntry(prevHash, base);
      audit.push({ ...base, dataHash, prevHash, hash });
      prevHash = hash;
    }
  }

  const { dropDeliveries, ...outbox } = createMemoryOutbox();

  return guardStore<MemoryStore>({
    kind: 'memory',
    ...createMemoryAppState(),
    ...outbox,
    ...createMemoryErasure({
      sessions,
      approvals,
      executions,
      rules,
      audit,
      appendAudit: appendAuditEntries,
      dropDeliveries,
      copy,
    }),
    ...createMemoryWebSessionStore(),
    ...createMemoryDataKeys(),

    async ensureSession(input) {
      let entry = sessions.get(input.id);
      if (entry === undefined) {
        entry = {
          record: {
            id: input.id,
            agent: input.agent,
            principal: input.principal,
            createdAt: input.at,
            updatedAt: input.at,
            messageCount: 0,
            batch: null,
          },
          messages: [],
          leaseOwner: null,
          leaseUntil: 0,
        };
        sessions.set(input.id, entry);
      }
      return copy(entry.record);
    },

    async getSession(id) {
      const entry = sessions.get(id);
      return entry === undefined ? null : copy(entry.record);
    },

    async listSessions() {
      return [...sessions.values()].map((entry) => copy(entry.record)).sort(bySessionCreated);
    },

    async loadMessages(session) {
      return copy(sessions.get(session)?.messages ?? []);
    },

    async listStalledSessions(query) {
      const waiting = new Set<string>();
      for (const request of approvals.values())
        if (request.status === 'pending') waiting.add(request.session);
      for (const record of executions.values()) if (record.status === 'unknown') waiting.add(record.session);
      const agents = query.agents === undefined ? null : new Set(query.agents);
      return [...sessions.values()]
        .filter(
          (entry) =>
            entry.record.batch !== null &&
            !waiting.has(entry.record.id) &&
            (agents === null || agents.has(entry.record.agent)) &&
            (query.includeHeld === true || entry.leaseOwner === null || entry.leaseUntil < query.nowMs),
        )
        .map((entry) => ({
          id: entry.record.id,
          agent: entry.record.agent,
          updatedAt: entry.record.updatedAt,
          lease: { owner: entry.leaseOwner, untilMs: entry.leaseUntil },
        }))
        .sort(byUpdated)
        .slice(0, query.limit ?? DEFAULT_STALLED_LIMIT);
    },

    async commitStep(step) {
      const entry = requireSession(step.session);
      if (entry.leaseOwner !== step.leaseOwner) {
        throw leaseLost(step.session, entry.leaseOwner, step.leaseOwner);
      }
      if (entry.record.messageCount !== step.expectedMessageCount) {
        throw staleStep(step.session, entry.record.messageCount, step.expectedMessageCount);
      }
      const newApprovals = step.approvals ?? [];
      for (const request of newApprovals) {
        if (approvals.has(request.id)) throw approvalExists(request.id);
        assertWritable(request);
      }
      for (const finish of step.finishes ?? []) checkFinishable(finish.requestId);
      let seq = entry.record.messageCount;
      for (const message of step.append) {
        entry.messages.push({ seq, at: step.at, message: copy(message) });
        seq += 1;
      }
      for (const finish of step.finishes ?? []) finishRecord(finish.requestId, finish);
      for (const request of newApprovals) approvals.set(request.id, copy(request));
      if (step.releaseLease) {
        entry.leaseOwner = null;
        entry.leaseUntil = 0;
      }
      entry.record = {
        ...entry.record,
        messageCount: seq,
        updatedAt: step.at,
        batch: step.batch === undefined ? entry.record.batch : copy(step.batch),
      };
      appendAuditEntries(step.audit, step.at);
      return copy(entry.record);
    },

    async acquireLease(request) {
      return takeLease(request);
    },

    async renewLease(renewal) {
      const entry = sessions.get(renewal.session);
      if (entry === undefined || entry.leaseOwner !== renewal.owner) return false;
      entry.leaseUntil = renewal.untilMs;
      return true;
    },

    async releaseLease(session, owner) {
      const entry = sessions.get(session);
      if (entry === undefined || entry.leaseOwner !== owner) return;
      entry.leaseOwner = null;
      entry.leaseUntil = 0;
    },

    async getLease(session) {
      const entry = sessions.get(session);
      return entry === undefined ? null : { owner: entry.leaseOwner, untilMs: entry.leaseUntil };
    },

    async getApproval(id) {
      const request = approvals.get(id);
      return request === undefined ? null : copy(request);
    },

    async getApprovalWithSession(id) {
      const request = approvals.get(id);
      if (request === undefined) return null;
      const entry = sessions.get(request.session);
      return { request: copy(request), session: entry === undefined ? null : copy(entry.record) };
    },

    async listApprovals(filter = {}) {
      return [...approvals.values()]
        .filter((request) => matchesFilter(request, filter))
        .sort(byCreated)
        .map(copy);
    },

    async decisionStats(query) {
      assertStatsQuery(query);
      return statsOfRows(approvals.values(), query);
    },

    async pageRequests(query) {
      const page = pageInMemory(approvals.values(), query);
      return { ...page, items: page.items.map(copy) };
    },

    async listDue(query) {
      return dueRequests(approvals.values(), query).map(copy);
    },

    async listNudgesDue(query) {
      return nudgesDue(approvals.values(), query).map(copy);
    },

    async advanceNudge(id, advance, events) {
      const request = approvals.get(id);
      if (request === undefined || !nudgeApplies(request, advance)) return null;
      const after = nudged(request, copy(advance));
      approvals.set(id, after);
      appendAuditEntries(events, advance.at);
      return copy(after);
    },

    async changeClaim(id, change, events) {
      const request = approvals.get(id);
      if (request === undefined || !claimApplies(request, change))
        return { won: false, request: request === undefined ? null : copy(request) };
      const after: ApprovalRequest = { ...request, claim: copy(change.claim) };
      approvals.set(id, after);
      appendAuditEntries(events, change.at);
      return { won: true, request: copy(after) };
    },

    async countPending() {
      let pending = 0;
      for (const request of approvals.values()) if (request.status === 'pending') pending++;
      return pending;
    },

    async decide(id, decision, events, options = {}) {
      const request = approvals.get(id);
      if (
        request === undefined ||
        request.status !== 'pending' ||
        (decisionNeedsUnexpired(decision) && !(request.expiresAt > decision.at))
      ) {
        return { won: false, request: request === undefined ? null : copy(request) };
      }
      const { rule } = options;
      if (rule !== undefined) {
        if (rule.session !== request.session) {
          throw ruleOutsideSession(rule.id, rule.session, id, request.session);
        }
        if (rules.has(rule.id)) throw ruleExists(rule.id);
      }
      const decided: ApprovalRequest = { ...request, status: decision.verdict, decision: copy(decision) };
      approvals.set(id, decided);
      if (rule !== undefined) rules.set(rule.id, copy(rule));
      appendAuditEntries(events, decision.at);
      const leased = options.lease !== undefined && takeLease({ ...options.lease, session: request.session });
      if (!leased || options.loadRun !== true) return { won: true, request: copy(decided), leased };
      const execution = executions.get(id);
      return {
        won: true,
        request: copy(decided),
        leased,
        run: {
          messages: copy(sessions.get(request.session)?.messages ?? []),
          execution: execution === undefined ? null : copy(execution),
        },
      };
    },

    async recordApproval(id, update, events) {
      const request = approvals.get(id);
      if (request === undefined || !approvalUpdateApplies(request, update)) {
        return { won: false, request: request === undefined ? null : copy(request) };
      }
      const updated = withApprovalUpdate(request, update);
      approvals.set(id, updated);
      appendAuditEntries(events, update.at);
      return { won: true, request: copy(updated) };
    },

    async listRules(filter = {}) {
      return [...rules.values()]
        .filter(
          (rule) =>
            (filter.session === undefined || rule.session === filter.session) &&
            (filter.includeRevoked === true || rule.revokedAt === null),
        )
        .sort(byRuleCreated)
        .map(copy);
    },

    async getRule(id) {
      const rule = rules.get(id);
      return rule === undefined ? null : copy(rule);
    },

    async revokeRule(id, by, at, events) {
      const rule = rules.get(id);
      if (rule === undefined) return null;
      if (rule.revokedAt !== null) return copy(rule);
      const revoked: StandingRule = { ...rule, revokedAt: at, revokedBy: by };
      rules.set(id, revoked);
      appendAuditEntries(events, at);
      return copy(revoked);
    },

    async startExecution(start, events) {
      // Fenced first: a run that lost the session learns so even if the row exists.
      if (start.lease !== undefined) {
        const entry = requireSession(start.session);
        const lease = { owner: entry.leaseOwner, untilMs: entry.leaseUntil };
        if (!holdsLease(lease, start.lease))
          throw executionStartRefused(start.requestId, start.session, lease, start.lease);
      }
      const existing = executions.get(start.requestId);
      if (existing !== undefined) return { created: false, record: copy(existing) };
      requireSession(start.session);
      const record: ExecutionRecord = {
        requestId: start.requestId,
        session: start.session,
        callId: start.callId,
        tool: start.tool,
        args: copy(start.args),
        idempotencyKey: start.idempotencyKey,
        status: 'started',
        result: null,
        attempts: 1,
        startedAt: start.at,
        finishedAt: null,
      };
      executions.set(record.requestId, record);
      appendAuditEntries(events, start.at);
      return { created: true, record: copy(record) };
    },

    async finishExecution(requestId, finish) {
      checkFinishable(requestId);
      return copy(finishRecord(requestId, finish));
    },

    async getExecution(requestId) {
      const record = executions.get(requestId);
      return record === undefined ? null : copy(record);
    },

    async listExecutions(filter = {}) {
      return executionsInMemory(executions.values(), filter).map(copy);
    },

    async appendAudit(events, at) {
      appendAuditEntries(events, at);
    },

    async listAudit(query) {
      const { session: named, afterSeq, limit } = auditCursor(query);
      // Entries keep their session as a database stores it (storedText); SQL binds the filter so.
      const session = named === undefined ? undefined : storedText(named);
      // seq runs 1, 2, 3…: the entry after `afterSeq` is at index `afterSeq`.
      const page: AuditEntry[] = [];
      for (let index = afterSeq; index < audit.length && (limit === null || page.length < limit); index++) {
        const entry = audit[index]!;
        if (session === undefined || entry.session === session) page.push(copy(entry));
      }
      return page;
    },

    async lastAuditSeq() {
      return audit.length;
    },

    async exportSession(id) {
      const entry = sessions.get(id);
      if (entry === undefined) return null;
      // Rules stay behind: they are trust granted in this store and are granted again after a move.
      return copy({
        session: entry.record,
        messages: entry.messages,
        approvals: [...approvals.values()].filter((request) => request.session === id).sort(byCreated),
        executions: [...executions.values()].filter((record) => record.session === id).sort(byStarted),
      });
    },

    async importSession(snapshot, events) {
      const id = snapshot.session.id;
      if (sessions.has(id)) throw sessionExists(id);
      for (const request of snapshot.approvals) {
        if (approvals.has(request.id)) throw approvalExists(request.id);
        assertWritable(request);
      }
      for (const record of snapshot.executions) {
        if (executions.has(record.requestId)) throw executionExists(record.requestId);
      }
      const imported = copy(snapshot);
      sessions.set(id, {
        record: imported.session,
        messages: imported.messages,
        leaseOwner: null,
        leaseUntil: 0,
      });
      for (const request of imported.approvals) approvals.set(request.id, request);
      for (const record of imported.executions) executions.set(record.requestId, record);
      appendAuditEntries(events, new Date().toISOString());
    },

    async close() {},
  });
}
