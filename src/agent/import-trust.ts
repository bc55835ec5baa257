import type { ApprovalRequest } from '../core/approval.ts';
import type { AuditEvent } from '../core/audit.ts';
import { expiryAfter } from '../core/instant.ts';
import type { SessionSnapshot } from '../store/store.ts';

/** What an import writes and what its `session.imported` entry says about it. */
export interface ImportPlan {
  snapshot: SessionSnapshot;
  /** The key id whose signature verified; null for an unsigned (or unverifiable) file. */
  signedBy: string | null;
  /** Requests whose decision was taken over from the file as it was. */
  keptDecisions: string[];
  /** Decided requests of the open batch that wait for a person again in this store. */
  reopened: string[];
  /** Ledger rows taken over from the file. */
  keptLedger: string[];
  /** Ledger rows of the file that were not imported. */
  refusedLedger: string[];
}

const decided = (approval: ApprovalRequest) => approval.status !== 'pending';

/** A signed file is what the source store held: decisions and ledger rows stay as they are. */
export function planSignedImport(snapshot: SessionSnapshot, keyId: string): ImportPlan {
  return {
    snapshot,
    signedBy: keyId,
    keptDecisions: snapshot.approvals.filter(decided).map((approval) => approval.id),
    reopened: [],
    keptLedger: snapshot.executions.map((record) => record.requestId),
    refusedLedger: [],
  };
}

/**
 * Nobody vouches for an unsigned file, so nothing in it may cause a call to run or tell the
 * model a call ran:
 * - every ledger row is refused: a `succeeded` row would hand the model a result no tool
 *   produced, and a `started` or `unknown` one would let a retry run a call nobody approved here;
 * - every decided request of the open batch (the calls `resume` acts on) is pending again,
 *   for a person in this store to decide. Its expiry restarts: it gets the same window it had
 *   (expiresAt − createdAt), counted from the import, so it does not expire on arrival;
 * - decided requests outside the open batch stay as they are: the conversation already holds
 *   their answer and nothing runs a request outside the open batch.
 * A re-opened request that was approved runs, once approved again, with the same idempotency
 * key as in the source store (`countersign:<request id>`), so a tool that honours the key
 * does not repeat a call that already ran there.
 */
export function planUnsignedImport(snapshot: SessionSnapshot, now: Date): ImportPlan {
  const inBatch = new Set(
    (snapshot.session.batch?.calls ?? []).flatMap((call) =>
      call.disposition.kind === 'approval' ? [call.disposition.approvalId] : [],
    ),
  );
  const reopened: string[] = [];
  const keptDecisions: string[] = [];
  const approvals = snapshot.approvals.map((approval): ApprovalRequest => {
    if (!decided(approval)) return approval;
    if (!inBatch.has(approval.id)) {
      keptDecisions.push(approval.id);
      return approval;
    }
    reopened.push(approval.id);
    const window = Math.max(0, Date.parse(approval.expiresAt) - Date.parse(approval.createdAt));
    return {
      ...approval,
      status: 'pending',
      decision: null,
      expiresAt: expiryAfter(now, window),
    };
  });
  return {
    snapshot: { ...snapshot, approvals, executions: [] },
    signedBy: null,
    keptDecisions,
    reopened,
    keptLedger: [],
    refusedLedger: snapshot.executions.map((record) => record.requestId),
  };
}

/**
 * The audit an import writes in the target store: one `session.imported` entry saying what
 * was taken over, re-opened and refused, then a `request.raised` for every request that waits
 * for a person here, so the chain of this store says each of them exists.
 */
export function importAudit(plan: ImportPlan, by: string): AuditEvent[] {
  const { snapshot } = plan;
  const session = snapshot.session.id;
  const reopened = new Set(plan.reopened);
  return [
    {
      kind: 'session.imported',
      session,
      requestId: null,
      actor: by,
      data: {
        messages: snapshot.messages.length,
        approvals: snapshot.approvals.length,
        signed: plan.signedBy !== null,
        keyId: plan.signedBy,
        requests: snapshot.approvals.map((approval) => approval.id),
        keptDecisions: plan.keptDecisions,
        reopened: plan.reopened,
        keptLedger: plan.keptLedger,
        refusedLedger: plan.refusedLedger,
      },
    },
    ...snapshot.approvals
      .filter((approval) => approval.status === 'pending')
      .map(
        (approval): AuditEvent => ({
          kind: 'request.raised',
          session,
          requestId: approval.id,
          actor: by,
          data: {
            tool: approval.tool,
            args: approval.argsJson,
            argsHash: approval.argsHash,
            effect: approval.effect,
            expiresAt: approval.expiresAt,
            imported: true,
            reopened: reopened.has(approval.id),
          },
        }),
      ),
  ];
}
