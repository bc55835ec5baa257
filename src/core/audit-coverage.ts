import type { ApprovalRequest, DecisionKind } from './approval.ts';
import type { AuditEntry, AuditKind } from './audit.ts';
import type { ExecutionRecord } from './execution.ts';

/** Audit kinds a stored row must be matched by (any one of them), per the row's state. */
/** The audit entries a stored row's state implies (listed for the API's schema). */
export const AUDIT_REQUIREMENTS = [
  'request.raised',
  'request.decided',
  'request.moved-on',
  'request.expired',
  'request.auto-approved',
  'execution.started',
  'execution.finished',
] as const;

export type AuditRequirement = (typeof AUDIT_REQUIREMENTS)[number];

export interface AuditGap {
  missing: AuditRequirement;
  /** Requests or ledger rows (by request id) without such an entry. */
  count: number;
  /** The first few of them, in the order read. */
  first: string[];
}

const FIRST = 3;

const decisionEntry: Record<DecisionKind, AuditRequirement> = {
  person: 'request.decided',
  'moved-on': 'request.moved-on',
  expiry: 'request.expired',
  'standing-rule': 'request.auto-approved',
  'auto-rule': 'request.auto-approved',
};

// An integrity refusal writes tamper.refused where a run writes execution.started/finished;
// a person's reconcile stands for execution.finished. A workflow's port request raised,
// answered or expired before port requests were rows has its workflow.* entry instead (the
// row was adopted from its checkpoint); new ones get the request.* entries like tool calls.
const satisfiedBy: Record<AuditRequirement, readonly AuditKind[]> = {
  'request.raised': ['request.raised', 'workflow.requested'],
  'request.decided': ['request.decided', 'workflow.answered'],
  'request.moved-on': ['request.moved-on'],
  'request.expired': ['request.expired', 'workflow.expired'],
  'request.auto-approved': ['request.auto-approved'],
  'execution.started': ['execution.started', 'tamper.refused'],
  'execution.finished': ['execution.finished', 'execution.reconciled', 'tamper.refused'],
};

/** What the audit says about each request id, and what imports vouch for. */
export interface AuditIndex {
  /** Kinds as read back, so kinds this version does not write count as nothing. */
  kinds: Map<string, Set<string>>;
  /** Requests that arrived with an imported session (raised in another store). */
  importedRequests: Set<string>;
  /** Decisions and ledger rows taken over from an import as they were. */
  importedDecisions: Set<string>;
  importedLedger: Set<string>;
  /** Sessions imported before imports listed their requests: everything they held counts as audited. */
  legacyImports: Set<string>;
}

function strings(value: unknown): string[] | null {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : null;
}

export function indexAudit(entries: Iterable<AuditEntry>): AuditIndex {
  const index: AuditIndex = {
    kinds: new Map(),
    importedRequests: new Set(),
    importedDecisions: new Set(),
    importedLedger: new Set(),
    legacyImports: new Set(),
  };
  for (const entry of entries) {
    if (entry.kind === 'session.imported') {
      // An erased entry (retention) no longer lists its requests: its session counts as a
      // legacy import, everything it held as audited.
      const requests = entry.erasedAt === undefined ? strings(entry.data.requests) : null;
      if (requests === null) {
        if (entry.session !== null) index.legacyImports.add(entry.session);
        continue;
      }
      for (const id of requests) index.importedRequests.add(id);
      for (const id of strings(entry.data.keptDecisions) ?? []) index.importedDecisions.add(id);
      for (const id of strings(entry.data.keptLedger) ?? []) index.importedLedger.add(id);
      continue;
    }
    if (entry.requestId === null) continue;
    let kinds = index.kinds.get(entry.requestId);
    if (kinds === undefined) {
      kinds = new Set();
      index.kinds.set(entry.requestId, kinds);
    }
    kinds.add(entry.kind);
  }
  return index;
}

/**
 * Every stored request and ledger row must have the audit entries its state implies, so an
 * audit table that was emptied or cut short no longer verifies as "intact". A pure function
 * over rows; the stores only read them.
 */
export function auditGaps(
  index: AuditIndex,
  approvals: Iterable<Pick<ApprovalRequest, 'id' | 'session' | 'status' | 'decision'>>,
  executions: Iterable<Pick<ExecutionRecord, 'requestId' | 'session' | 'status'>>,
): AuditGap[] {
  const gaps = new Map<AuditRequirement, AuditGap>();
  const require = (id: string, requirement: AuditRequirement) => {
    const kinds = index.kinds.get(id);
    if (satisfiedBy[requirement].some((kind) => kinds?.has(kind))) return;
    let gap = gaps.get(requirement);
    if (gap === undefined) {
      gap = { missing: requirement, count: 0, first: [] };
      gaps.set(requirement, gap);
    }
    gap.count += 1;
    if (gap.first.length < FIRST) gap.first.push(id);
  };
  for (const approval of approvals) {
    if (index.legacyImports.has(approval.session)) continue;
    if (!index.importedRequests.has(approval.id)) require(approval.id, 'request.raised');
    if (approval.decision !== null && !index.importedDecisions.has(approval.id)) {
      require(approval.id, decisionEntry[approval.decision.kind]);
    }
  }
  for (const execution of executions) {
    if (index.legacyImports.has(execution.session) || index.importedLedger.has(execution.requestId)) continue;
    require(execution.requestId, 'execution.started');
    if (execution.status === 'succeeded' || execution.status === 'failed') {
      require(execution.requestId, 'execution.finished');
    }
  }
  return [...gaps.values()];
}

/** One line for a person: what is missing, how often, and where to start looking. */
export function describeGaps(gaps: readonly AuditGap[]): string {
  return gaps
    .map((gap) => {
      const rows = gap.missing.startsWith('execution.') ? 'ledger row' : 'request';
      const plural = gap.count === 1 ? '' : 's';
      const more = gap.count > gap.first.length ? ', …' : '';
      return `${gap.count} ${rows}${plural} without ${gap.missing} (${gap.first.join(', ')}${more})`;
    })
    .join('; ');
}
