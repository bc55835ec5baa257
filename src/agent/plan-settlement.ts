import { type ApprovalRequest, type Decision, EXPIRED_REASON, MOVED_ON_REASON } from '../core/approval.ts';
import type { ToolResult } from '../core/messages.ts';
import type { BatchCall, OpenBatch } from '../core/session.ts';

/** One call of a settling batch: answered without running anything, or run. */
export type SettlementStep =
  | { kind: 'answer'; result: ToolResult }
  | { kind: 'run-direct'; call: BatchCall }
  /**
   * `deferFinish`: the last call of the batch that runs anything leaves its ledger result to
   * the step commit that carries the tool results (see runApprovedCall).
   */
  | { kind: 'run-approved'; call: BatchCall; request: ApprovalRequest; deferFinish: boolean }
  /**
   * A request a new message keeps waiting (`onNewMessage: 'keep'`): the model is told it
   * still waits, and the call is carried to the next batch (OpenBatch.kept).
   */
  | { kind: 'keep'; call: BatchCall; request: ApprovalRequest };

export type SettlementPlan =
  /** A request the batch names is not in the store: an integrity violation. */
  | { kind: 'missing'; approvalId: string }
  /** A request still waits for a person; nothing is settled. */
  | { kind: 'waiting' }
  /** Every request is decided and queued calls are next: they surface before anything runs. */
  | { kind: 'surface-queued' }
  /** Every call is accounted for: answer or run these, in order, and the batch is settled. */
  | { kind: 'settle'; steps: SettlementStep[] };

/**
 * Given an open batch and its requests as read (by id), what settling it means now.
 * `surfaceQueued` is false once queued calls have had their turn, or when a new message
 * moved on: queued calls are then answered "moved on".
 */
export function planSettlement(
  batch: OpenBatch,
  requests: ReadonlyMap<string, ApprovalRequest>,
  options: {
    surfaceQueued: boolean;
    /** Pending requests a new message keeps waiting: they do not hold the batch up. */
    keep?: ReadonlySet<string>;
  },
): SettlementPlan {
  for (const call of batch.calls) {
    if (call.disposition.kind !== 'approval') continue;
    const request = requests.get(call.disposition.approvalId);
    if (!request) return { kind: 'missing', approvalId: call.disposition.approvalId };
    if (request.status === 'pending' && !options.keep?.has(request.id)) return { kind: 'waiting' };
  }
  if (options.surfaceQueued && batch.calls.some((call) => call.disposition.kind === 'queued'))
    return { kind: 'surface-queued' };
  const lastRunning = batch.calls.findLastIndex((call) => runsSomething(call, requests));
  const steps = batch.calls.map((call, index) => settlementStep(call, requests, index === lastRunning));
  return { kind: 'settle', steps };
}

function settlementStep(
  call: BatchCall,
  requests: ReadonlyMap<string, ApprovalRequest>,
  last: boolean,
): SettlementStep {
  const { disposition } = call;
  if (disposition.kind === 'error')
    return {
      kind: 'answer',
      result: { callId: call.callId, tool: call.tool, output: disposition.output, isError: true },
    };
  if (disposition.kind === 'queued') return { kind: 'answer', result: rejectionResult(call, movedOn) };
  if (disposition.kind === 'run') return { kind: 'run-direct', call };
  // planSettlement checked that every request of the batch is in the map.
  const request = requests.get(disposition.approvalId)!;
  if (request.status === 'pending') return { kind: 'keep', call, request };
  if (request.status !== 'approved')
    return { kind: 'answer', result: rejectionResult(call, request.decision) };
  return { kind: 'run-approved', call, request, deferFinish: last };
}

const movedOn: Decision = {
  verdict: 'rejected',
  by: 'countersign',
  reason: MOVED_ON_REASON,
  at: '',
  kind: 'moved-on',
};

/** Whether settling this call runs a tool (a direct call, or an approved one). */
function runsSomething(call: BatchCall, requests: ReadonlyMap<string, ApprovalRequest>): boolean {
  const { disposition } = call;
  if (disposition.kind === 'run') return true;
  return disposition.kind === 'approval' && requests.get(disposition.approvalId)?.status === 'approved';
}

/** What the model is told for a call that did not run: rejected, expired or moved on, and why. */
export function rejectionResult(call: BatchCall, decision: Decision | null): ToolResult {
  const reason = decision?.reason ?? EXPIRED_REASON;
  const lead =
    decision?.kind === 'expiry'
      ? 'Expired, not done'
      : decision?.kind === 'moved-on'
        ? 'Not done'
        : 'Rejected by the reviewer, not done';
  return { callId: call.callId, tool: call.tool, output: `${lead}. Reason: ${reason}`, isError: true };
}
