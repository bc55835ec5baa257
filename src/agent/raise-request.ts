import type { ApprovalRequest, RequestNudges } from '../core/approval.ts';
import type { AuditEvent } from '../core/audit.ts';
import { bindArgs } from '../core/canonical-json.ts';
import { expiryAfter } from '../core/instant.ts';
import type { JsonValue } from '../core/json.ts';
import { waitingFields } from '../core/request-defaults.ts';
import type { AutoApproval } from './match-rule.ts';

/** A new tool-call request, bound to its canonical arguments, waiting until now + ttl. */
export function toolCallRequest(input: {
  id: string;
  session: string;
  agent: string;
  callId: string;
  tool: string;
  args: JsonValue;
  effect: string;
  now: Date;
  ttlMs: number;
  raisedBy: string | null;
  /** The session's principal, recorded so who may decide is known from the row alone. */
  customer: string | null;
  /** The workflow run the agent acts in (agentExecutor binds it); null outside one. */
  run: string | null;
  requiredRole: string | null;
  /** The tool's reminder, escalation and warning times for this request (planNudges). */
  nudges?: RequestNudges | null;
  /** Argument fields a person may edit (the tool's `editable`). */
  editable?: readonly string[];
  /** Distinct approvers the policy asks for (1 unless it answered a quorum). */
  approvalsNeeded?: number;
}): ApprovalRequest {
  return {
    id: input.id,
    session: input.session,
    agent: input.agent,
    callId: input.callId,
    tool: input.tool,
    args: input.args,
    ...bindArgs(input.args),
    effect: input.effect,
    createdAt: input.now.toISOString(),
    expiresAt: expiryAfter(input.now, input.ttlMs),
    status: 'pending',
    decision: null,
    raisedBy: input.raisedBy,
    kind: 'tool-call',
    run: input.run,
    customer: input.customer,
    requiredRole: input.requiredRole,
    claim: null,
    escalatedTo: null,
    nudges: input.nudges ?? null,
    ...waitingFields(input.effect, {
      ...(input.editable ? { editable: input.editable } : {}),
      ...(input.approvalsNeeded ? { approvalsNeeded: input.approvalsNeeded } : {}),
    }),
  };
}

/**
 * The audit entry of a raised request: what was asked, bound by its hash, and its effect;
 * with when, by whom and whether a rule approved it on the spot (`status`), all a live view of
 * the request needs (src/events/from-audit.ts).
 */
export function raisedEvent(
  request: ApprovalRequest,
  tool: { name: string; identity: string },
  actor: string,
  status: 'pending' | 'approved' = 'pending',
): AuditEvent {
  return {
    kind: 'request.raised',
    session: request.session,
    requestId: request.id,
    actor,
    data: {
      tool: tool.name,
      toolIdentity: tool.identity,
      args: request.argsJson,
      argsHash: request.argsHash,
      effect: request.effect,
      expiresAt: request.expiresAt,
      createdAt: request.createdAt,
      raisedBy: request.raisedBy,
      status,
      // Who it is for and who may decide it, so a live card says the same as the row.
      agent: request.agent,
      callId: request.callId,
      customer: request.customer,
      requiredRole: request.requiredRole,
      run: request.run,
      effectHash: request.effectHash,
      editable: request.editable,
      approvalsNeeded: request.approvalsNeeded,
      ...(request.nudges === null ? {} : { nudges: request.nudges }),
    },
  };
}

/** The request approved on the spot by a rule, and the audit entry naming the rule. */
export function approvedByRule(
  request: ApprovalRequest,
  auto: AutoApproval,
): { request: ApprovalRequest; event: AuditEvent } {
  return {
    request: {
      ...request,
      status: 'approved',
      decision: {
        verdict: 'approved',
        by: auto.by,
        reason: auto.reason,
        at: request.createdAt,
        kind: auto.kind,
      },
    },
    event: {
      kind: 'request.auto-approved',
      session: request.session,
      requestId: request.id,
      actor: auto.by,
      data: {
        rule: auto.by,
        kind: auto.kind,
        tool: request.tool,
        args: request.argsJson,
        argsHash: request.argsHash,
      },
    },
  };
}
