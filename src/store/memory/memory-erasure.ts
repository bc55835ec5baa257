import type { ApprovalRequest } from '../../core/approval.ts';
import type { AuditEntry, AuditEvent } from '../../core/audit.ts';
import { deliveryIdsOf } from '../../core/delivery-id.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import type { SessionRecord } from '../../core/session.ts';
import type { StandingRule } from '../../core/standing-rule.ts';
import { storedText } from '../../core/storable-text.ts';
import type { ErasureCounts, PrincipalErasure, PurgeCounts, Retention } from '../ports/erasure.ts';

interface Held {
  sessions: Map<
    string,
    { record: SessionRecord; messages: unknown[]; leaseOwner: string | null; leaseUntil: number }
  >;
  approvals: Map<string, ApprovalRequest>;
  executions: Map<string, ExecutionRecord>;
  rules: Map<string, StandingRule>;
  audit: AuditEntry[];
  appendAudit(events: readonly AuditEvent[] | undefined, at: string): void;
  dropDeliveries(ids: readonly string[]): number;
  copy<T>(value: T): T;
}

const byCreated = (a: ApprovalRequest, b: ApprovalRequest) =>
  a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1;

/** Erasure and retention over the memory store's maps (no runs: a memory Store keeps none). */
export function createMemoryErasure(held: Held): PrincipalErasure & Retention {
  const { sessions, approvals, executions, rules, audit } = held;

  function eraseEntry(index: number, at: string): void {
    const entry = audit[index]!;
    audit[index] = { ...entry, data: {}, erasedAt: at };
  }

  function removeRequest(id: string): number {
    executions.delete(id);
    return approvals.delete(id) ? 1 : 0;
  }

  function removeSession(id: string): { messages: number; requests: number; executions: number } {
    const entry = sessions.get(id);
    let requests = 0;
    let removedExecutions = 0;
    for (const [requestId, request] of approvals)
      if (request.session === id) requests += removeRequest(requestId);
    for (const [requestId, record] of executions)
      if (record.session === id && executions.delete(requestId)) removedExecutions += 1;
    for (const [ruleId, rule] of rules) if (rule.session === id) rules.delete(ruleId);
    sessions.delete(id);
    return { messages: entry?.messages.length ?? 0, requests, executions: removedExecutions };
  }

  const sessionFinished = (id: string, nowMs: number): boolean => {
    const entry = sessions.get(id);
    if (entry === undefined || entry.record.batch !== null) return false;
    if (entry.leaseOwner !== null && entry.leaseUntil >= nowMs) return false;
    for (const request of approvals.values())
      if (request.session === id && request.status === 'pending') return false;
    return true;
  };

  return {
    async listPendingOf(principal) {
      const theirs = new Set(
        [...sessions.values()]
          .filter((entry) => entry.record.principal === principal)
          .map((entry) => entry.record.id),
      );
      return [...approvals.values()]
        .filter(
          (request) =>
            request.status === 'pending' && (request.customer === principal || theirs.has(request.session)),
        )
        .sort(byCreated)
        .map((request) => held.copy(request));
    },

    // It keeps no runs to remove: a memory app's runs live in a checkpoint store of their own.
    async runsToErase() {
      return [];
    },

    async erasePrincipal({ principal, at, audit: trail }): Promise<ErasureCounts> {
      const theirSessions = [...sessions.values()]
        .filter((entry) => entry.record.principal === principal)
        .map((entry) => entry.record.id);
      // Audit entries hold ids as a database stores them (storedText): match them so.
      const sessionSet = new Set(theirSessions);
      const storedSessions = new Set(theirSessions.map(storedText));
      const requests = [...approvals.values()]
        .filter((request) => request.customer === principal || sessionSet.has(request.session))
        .map((request) => request.id);
      const storedRequests = new Set(requests.map(storedText));
      let auditEntries = 0;
      audit.forEach((entry, index) => {
        if (entry.erasedAt !== undefined) return;
        const theirs =
          (entry.session !== null && storedSessions.has(entry.session)) ||
          (entry.requestId !== null && storedRequests.has(entry.requestId));
        if (!theirs) return;
        eraseEntry(index, at);
        auditEntries += 1;
      });
      const deliveries = held.dropDeliveries(requests.flatMap(deliveryIdsOf));
      const counts: ErasureCounts = {
        sessions: 0,
        messages: 0,
        requests: 0,
        executions: 0,
        runs: 0,
        checkpoints: 0,
        auditEntries,
        deliveries,
      };
      for (const id of requests) {
        if (executions.has(id)) counts.executions += 1;
        counts.requests += removeRequest(id);
      }
      for (const id of theirSessions) {
        const removed = removeSession(id);
        counts.sessions += 1;
        counts.messages += removed.messages;
        counts.requests += removed.requests;
        counts.executions += removed.executions;
      }
      held.appendAudit(trail?.(counts), at);
      return counts;
    },

    async purgeBatch(batch): Promise<PurgeCounts> {
      const { before, at, nowMs, dryRun } = batch;
      const limit = dryRun ? Number.POSITIVE_INFINITY : Math.max(1, Math.trunc(batch.limit));
      const take = <T>(items: T[]): T[] => items.slice(0, limit);
      const oldSessions =
        before.sessions === undefined
          ? []
          : take(
              [...sessions.values()]
                .filter(
                  (entry) =>
                    entry.record.updatedAt < before.sessions! && sessionFinished(entry.record.id, nowMs),
                )
                .map((entry) => entry.record.id),
            );
      const openBatch = (session: string) => (sessions.get(session)?.record.batch ?? null) !== null;
      const oldRequests =
        before.requests === undefined
          ? []
          : take(
              [...approvals.values()]
                .filter(
                  (request) =>
                    request.status !== 'pending' &&
                    request.createdAt < before.requests! &&
                    !openBatch(request.session),
                )
                .sort(byCreated)
                .map((request) => request.id),
            );
      const oldEntries =
        before.audit === undefined
          ? []
          : take(
              audit.flatMap((entry, index) =>
                entry.erasedAt === undefined &&
                entry.at < before.audit! &&
                entry.kind !== 'principal.erased' &&
                entry.kind !== 'retention.purged'
                  ? [index]
                  : [],
              ),
            );
      const counts = {
        sessions: oldSessions.length,
        runs: 0,
        requests: oldRequests.length,
        auditEntries: oldEntries.length,
      };
      if (!dryRun) {
        for (const id of oldSessions) removeSession(id);
        for (const id of oldRequests) removeRequest(id);
        for (const index of oldEntries) eraseEntry(index, at);
        if (Object.values(counts).some((n) => n > 0)) held.appendAudit(batch.audit?.(counts), at);
      }
      return counts;
    },
  };
}
