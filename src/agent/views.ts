import type {
  Approval,
  ApprovalRequest,
  ApprovalStatus,
  Decision,
  RequestClaim,
  RequestEdit,
  RequestKind,
  RequestNudges,
} from '../core/approval.ts';
import { bindingProblem, toolCallBinding } from '../core/check-binding.ts';
import { activeClaim } from '../core/claims.ts';
import type { ExecutionRecord } from '../core/execution.ts';
import type { JsonValue } from '../core/json.ts';

/** The public, stable shape of a request: what the CLI prints and a person reviews. */
export interface ApprovalView {
  id: string;
  /** A model's tool call, or a workflow's port request: both wait, are decided and are shown alike. */
  kind: RequestKind;
  session: string;
  /** The workflow run waiting on it, if any. */
  run: string | null;
  /** The agent that raised it; for a port request, the workflow. */
  agent: string;
  /** The model's id of the call (to find it in the conversation); for a port, the executor that asked. */
  callId: string;
  /** The tool's name; for a port request, the port's id. */
  tool: string;
  args: JsonValue;
  argsHash: string;
  effect: string;
  createdAt: string;
  expiresAt: string;
  status: ApprovalStatus;
  decision: Decision | null;
  /** Who raised it (posted the message that led to it); null when not recorded. They may not decide it. */
  raisedBy: string | null;
  /** The customer it acts for; null when none was signed in. */
  customer: string | null;
  /** The role a decider needs, as recorded when it was raised; null when any approver may. */
  requiredRole: string | null;
  /** Argument fields a person may change before approving; [] when none. */
  editable: string[];
  /** How many distinct people must approve (1 unless the policy asked for a quorum). */
  approvalsNeeded: number;
  /** Approvals so far while a quorum fills, oldest first. */
  approvals: Approval[];
  /** The call as an approver edited it, which later approvers approve and which runs; null when none. */
  edit: RequestEdit | null;
  /**
   * 'mismatch' when the stored arguments (or the effect preview, or an edited call) no longer
   * hash to what was recorded: do not approve.
   */
  integrity: 'ok' | 'mismatch';
  /** Who is working on it and until when; null when nobody is (a lapsed claim is none). */
  claim: RequestClaim | null;
  /** The role it was escalated to (its holders may decide it too); null when not escalated. */
  escalatedTo: string | null;
  /** Its reminder, escalation and expiry-warning times and which fired; null when none configured. */
  nudges: RequestNudges | null;
}

/** The stored arguments still are the ones that were hashed when the request was raised. */
export function argsIntact(request: ApprovalRequest): boolean {
  return bindingProblem(toolCallBinding(request)) === null;
}

export function toApprovalView(request: ApprovalRequest, now: string): ApprovalView {
  // A pending request past its expiry is expired for every reader, even before a sweep writes it.
  const overdue = request.status === 'pending' && request.expiresAt <= now;
  return {
    id: request.id,
    kind: request.kind,
    session: request.session,
    run: request.run,
    agent: request.agent,
    callId: request.callId,
    tool: request.tool,
    args: request.args,
    argsHash: request.argsHash,
    effect: request.effect,
    createdAt: request.createdAt,
    expiresAt: request.expiresAt,
    status: overdue ? 'expired' : request.status,
    decision: request.decision,
    raisedBy: request.raisedBy,
    customer: request.customer,
    requiredRole: request.requiredRole,
    editable: request.editable,
    approvalsNeeded: request.approvalsNeeded,
    approvals: request.approvals,
    edit: request.edit,
    integrity: argsIntact(request) ? 'ok' : 'mismatch',
    claim: activeClaim(request, now),
    escalatedTo: request.escalatedTo,
    nudges: request.nudges,
  };
}

/**
 * Where a run stopped. 'continuing': handed to a worker (the agent has a continuation queue);
 * the session's own status is read later (`turn.finished` events, or the session's requests).
 */
export type TurnStatus = 'completed' | 'awaiting_approval' | 'awaiting_reconciliation' | 'continuing';

export interface TurnResult {
  session: string;
  status: TurnStatus;
  /** The agent's last words in this run; null when it is waiting without having spoken. */
  reply: string | null;
  /** Requests of this session still waiting for a person. */
  approvals: ApprovalView[];
  /** Approved calls whose outcome is unknown after a crash; a person must reconcile them. */
  unknown: ExecutionView[];
}

export interface ExecutionView {
  requestId: string;
  session: string;
  tool: string;
  args: JsonValue;
  status: ExecutionRecord['status'];
  result: JsonValue | null;
  idempotencyKey: string;
  startedAt: string;
  finishedAt: string | null;
}

export function toExecutionView(record: ExecutionRecord): ExecutionView {
  return {
    requestId: record.requestId,
    session: record.session,
    tool: record.tool,
    args: record.args,
    status: record.status,
    result: record.result,
    idempotencyKey: record.idempotencyKey,
    startedAt: record.startedAt,
    finishedAt: record.finishedAt,
  };
}
