import type { Decision } from '../core/approval.ts';
import { assertStorableInstant } from '../core/instant.ts';
import { readAuditEvents } from './audit-event-schema.ts';
import type { ExecutionFinish } from './ports/ledger.ts';
import type { ApprovalUpdate } from './ports/request-book.ts';
import type { StepCommit } from './ports/session-log.ts';
import { assertSnapshotConsistent, readSnapshot } from './snapshot-rules.ts';
import { stalledLimit } from './stalled-sessions.ts';
import type { SessionSnapshot, Store } from './store.ts';
import {
  approvalExists,
  approvalOutsideSession,
  approvalUpdateInvalid,
  executionExists,
  finishedTwice,
  finishStatusInvalid,
} from './store-errors.ts';

/*
 * The invariant checks every backend used to repeat, checked once above any backend. They
 * judge only the input, so the guard adds no store call: each guarded method calls the
 * backend's once, and every other member is the backend's own (guard.test.ts counts it).
 * Backends keep what must be atomic with the data: the compare-and-sets in their WHERE
 * clauses (decision, lease, fenced step, ledger), insert-if-absent (an id already stored),
 * a rule's session against its request's (read inside the decision), the ledger transition
 * from started or unknown, and the audit chain's link.
 *
 * What a backend behind the guard may assume:
 * - a step's requests belong to its session and have distinct ids, its ledger results
 *   name distinct requests and each ends as succeeded, failed or unknown;
 * - `listStalledSessions` gets a `limit` that is a whole number of at least 1;
 * - a decision's and a partial approval's `at` is a stored time in the UTC form;
 * - audit events appended or imported directly have an AuditEvent's shape (audit-event-schema.ts),
 *   and appended ones a time in the UTC form;
 * - an imported snapshot has the shape of a SessionSnapshot (snapshot-schema.ts) and is
 *   consistent (snapshot-rules.ts), with distinct request and ledger ids.
 */

const FINISHED: ReadonlySet<string> = new Set(['succeeded', 'failed', 'unknown']);
const GUARDED = Symbol.for('countersign.store.guarded');

function checkFinish(requestId: string, finish: ExecutionFinish): void {
  if (!FINISHED.has(finish.status)) throw finishStatusInvalid(requestId, finish.status);
}

function checkStep(step: StepCommit): void {
  const ids = new Set<string>();
  for (const request of step.approvals ?? []) {
    if (request.session !== step.session)
      throw approvalOutsideSession(request.id, request.session, step.session);
    if (ids.has(request.id)) throw approvalExists(request.id);
    ids.add(request.id);
  }
  const finished = new Set<string>();
  for (const finish of step.finishes ?? []) {
    checkFinish(finish.requestId, finish);
    if (finished.has(finish.requestId)) throw finishedTwice(finish.requestId);
    finished.add(finish.requestId);
  }
}

/*
 * The time a decision or a partial approval is taken at is compared as text with the request's
 * expiry, in the WHERE clause (`expires_at > $at`): a time in another form ("+02:00", no
 * milliseconds) sorts wrong, and a person's decision would go through after the expiry, or be
 * refused before it. The clock writes the UTC form; a library caller's value is checked here.
 */
const DECISION_HINT = 'Give the time as new Date().toISOString() gives it: UTC, YYYY-MM-DDTHH:MM:SS.sssZ.';
// The same for the time audit events are appended at: audit retention compares it as text.

function checkDecision(id: string, decision: Decision): void {
  assertStorableInstant(decision.at, `The decision of request ${id}: at`, DECISION_HINT);
}

function checkApprovalUpdate(id: string, update: ApprovalUpdate): void {
  assertStorableInstant(update.at, `The approval of request ${id}: at`, DECISION_HINT);
  const names = update.approvals.map((approval) => approval.by.toLowerCase());
  if (new Set(names).size !== names.length) throw approvalUpdateInvalid(id, 'one person approves twice');
  if (!Number.isInteger(update.approvalsNeeded) || update.approvalsNeeded < 1)
    throw approvalUpdateInvalid(
      id,
      `approvalsNeeded ${update.approvalsNeeded} is not a whole number of at least 1`,
    );
  if (update.approvals.length >= update.approvalsNeeded)
    throw approvalUpdateInvalid(id, 'it completes the quorum');
}

function checkSnapshot(input: unknown): SessionSnapshot {
  const snapshot = readSnapshot(input);
  assertSnapshotConsistent(snapshot);
  const approvals = new Set<string>();
  for (const request of snapshot.approvals) {
    if (approvals.has(request.id)) throw approvalExists(request.id);
    approvals.add(request.id);
  }
  const executions = new Set<string>();
  for (const record of snapshot.executions) {
    if (executions.has(record.requestId)) throw executionExists(record.requestId);
    executions.add(record.requestId);
  }
  return snapshot;
}

export function isGuarded(store: Store): boolean {
  return (store as unknown as Record<symbol, unknown>)[GUARDED] === true;
}

/**
 * Wraps a backend with the checks above; the open functions (`createMemoryStore`,
 * `createSqliteStore`, `createPostgresStore`, `openStore`) return guarded stores. A proxy,
 * so whatever else the backend is (a CheckpointStore, the server's outbox, a class
 * instance) stays reachable as it is. Guarding a guarded store returns it unchanged.
 */
export function guardStore<S extends Store>(raw: S): S {
  if (isGuarded(raw)) return raw;
  // Async, so a refused input is a rejected promise like any other store failure.
  const checked: Partial<Record<PropertyKey, unknown>> = {
    async commitStep(step: StepCommit) {
      checkStep(step);
      return raw.commitStep(step);
    },
    async finishExecution(requestId: string, finish: ExecutionFinish) {
      checkFinish(requestId, finish);
      return raw.finishExecution(requestId, finish);
    },
    async decide(...[id, decision, audit, options]: Parameters<Store['decide']>) {
      checkDecision(id, decision);
      return raw.decide(id, decision, audit, options);
    },
    async recordApproval(...[id, update, audit]: Parameters<Store['recordApproval']>) {
      checkApprovalUpdate(id, update);
      return raw.recordApproval(id, update, audit);
    },
    async listStalledSessions(query: Parameters<Store['listStalledSessions']>[0]) {
      return raw.listStalledSessions({ ...query, limit: stalledLimit(query) });
    },
    async importSession(...[snapshot, audit]: Parameters<Store['importSession']>) {
      const checked = checkSnapshot(snapshot);
      return raw.importSession(
        checked,
        audit === undefined
          ? undefined
          : readAuditEvents(audit, `The audit events of the import of session ${checked.session.id}`),
      );
    },
    async appendAudit(...[events, at]: Parameters<Store['appendAudit']>) {
      const checked = readAuditEvents(events, 'The audit events to append');
      assertStorableInstant(at, 'The time of the audit events to append', DECISION_HINT);
      return raw.appendAudit(checked, at);
    },
  };
  return new Proxy(raw, {
    get(target, property) {
      if (property === GUARDED) return true;
      if (Object.hasOwn(checked, property)) return checked[property];
      return Reflect.get(target, property);
    },
  });
}
