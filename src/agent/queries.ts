import { type AuditVerification, verifyAuditChain } from '../core/audit.ts';
import { auditGaps, describeGaps, indexAudit } from '../core/audit-coverage.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import type { ApprovalFilter, AuditQuery, ExecutionFilter, Store } from '../store/store.ts';
import { expireRequest } from './session-run.ts';
import { type ApprovalView, toApprovalView, toExecutionView } from './views.ts';

/** Waiting requests, oldest first. Requests past their expiry are never listed as waiting. */
export async function listPending(
  store: Pick<Store, 'listApprovals'>,
  filter: Omit<ApprovalFilter, 'status'> = {},
  now = new Date(),
): Promise<ApprovalView[]> {
  const at = now.toISOString();
  const rows = await store.listApprovals({ ...filter, status: 'pending' });
  return rows.filter((row) => row.expiresAt > at).map((row) => toApprovalView(row, at));
}

export async function showRequest(
  store: Pick<Store, 'getApproval'>,
  id: string,
  now = new Date(),
): Promise<ApprovalView> {
  const request = await store.getApproval(id);
  if (!request)
    throw new NotFoundError(`No approval request ${id}.`, {
      hint: 'List waiting requests with `countersign pending`.',
    });
  return toApprovalView(request, now.toISOString());
}

export async function listExecutions(store: Store, filter: ExecutionFilter = {}) {
  return (await store.listExecutions(filter)).map(toExecutionView);
}

/** Marks every overdue tool call expired (with its audit entry). Returns the ids it expired. */
export async function sweepExpired(store: Store, now = new Date()): Promise<string[]> {
  const at = now.toISOString();
  const expired: string[] = [];
  // The due-query, page by page (each expired row leaves it). Port requests are the
  // workflow runner's to expire (runner.expire), so their runs' audit says which port.
  for (;;) {
    const due = await store.listDue({ at, limit: 200, kind: 'tool-call' });
    let won = 0;
    for (const request of due) {
      if (!(await expireRequest(store, request, at))) continue;
      won += 1;
      expired.push(request.id);
    }
    if (due.length < 200 || won === 0) break;
  }
  return expired;
}

export async function auditTrail(store: Store, filter: AuditQuery = {}) {
  return store.listAudit(filter);
}

/**
 * The chain's links, then whether every request and ledger row has the entries its state
 * implies (see auditGaps): a chain that was emptied or cut short still links up.
 */
export async function verifyAudit(store: Store): Promise<AuditVerification> {
  const entries = await store.listAudit();
  const chain = verifyAuditChain(entries);
  if (!chain.ok) return chain;
  const index = indexAudit(entries);
  const missing = auditGaps(index, await store.listApprovals(), await store.listExecutions());
  if (missing.length === 0) return chain;
  return {
    ok: false,
    entries: chain.entries,
    brokenAt: null,
    problem: `the chain links up, but entries are missing: ${describeGaps(missing)}`,
    missing,
  };
}

export async function listRules(store: Store, session: string, options: { includeRevoked?: boolean } = {}) {
  return store.listRules({ session, includeRevoked: options.includeRevoked ?? false });
}

/** Revoking is immediate: the next matching call on that session asks a person again. */
export async function revokeRule(store: Store, id: string, by: string, now = new Date()) {
  const before = await store.getRule(id);
  if (!before)
    throw new NotFoundError(`No standing rule ${id}.`, {
      hint: 'List them with `countersign rules SESSION`.',
    });
  const at = now.toISOString();
  const rule = await store.revokeRule(id, by, at, [
    {
      kind: 'rule.revoked',
      session: before.session,
      requestId: before.sourceRequest,
      actor: by,
      data: { rule: id, tool: before.tool },
    },
  ]);
  return rule ?? before;
}
