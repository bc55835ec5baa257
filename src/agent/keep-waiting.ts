import { type ApprovalRequest, KEPT_NOTICE_LEAD } from '../core/approval.ts';
import { readableJson } from '../core/canonical-json.ts';
import type { JsonValue } from '../core/json.ts';
import type { ToolResult } from '../core/messages.ts';
import type { BatchCall, KeptCall } from '../core/session.ts';
import type { OnNewMessage } from '../tools/define-tool.ts';

/**
 * What a new customer message does to a waiting request (pure): the tool's own
 * `onNewMessage`, else the agent's; 'reject' answers it "moved on" (right when the customer
 * is the approver, as on the kitchen console), 'keep' lets it wait for the support desk.
 */
export function keepsWaiting(
  tool: { onNewMessage: OnNewMessage | undefined } | undefined,
  agent: OnNewMessage,
): boolean {
  return (tool?.onNewMessage ?? agent) === 'keep';
}

/** The tool result the model reads for a call whose request keeps waiting through a new message. */
export function stillWaitingResult(call: BatchCall, request: ApprovalRequest): ToolResult {
  const who = request.requiredRole ? `someone with the ${request.requiredRole} role` : 'a person';
  return {
    callId: call.callId,
    tool: call.tool,
    output:
      `Still waiting: ${who} has not decided this call yet (request ${request.id}), so nothing has been done. ` +
      'Tell the customer it is still waiting; do not propose it again. You will be told the outcome in a later message.',
  };
}

/** One decided kept call, and what the model is told of it. */
export interface KeptOutcome {
  call: KeptCall;
  request: ApprovalRequest;
  /** The tool's result when it ran; absent when it was rejected or expired. */
  result?: ToolResult;
}

/**
 * The message that brings the outcome of calls the model was told still wait: a user-role
 * notice from countersign (the call's own tool result was already given), so the model can
 * tell the customer what happened.
 */
export function keptNotice(outcomes: readonly KeptOutcome[]): string {
  const lines = outcomes.map(({ call, request, result }) => {
    const what = `${call.tool} ${readableJson(call.args)} (request ${request.id})`;
    const decision = request.decision;
    if (request.status === 'approved' && result) {
      return `- ${what}: approved by ${decision?.by ?? 'a person'}${result.isError ? ', but it failed' : ' and done'}. Result: ${shown(result.output)}`;
    }
    if (request.status === 'expired' || decision?.kind === 'expiry') {
      return `- ${what}: expired without a decision, so nothing was done.`;
    }
    return `- ${what}: rejected by ${decision?.by ?? 'a person'}, so nothing was done. Reason: ${decision?.reason ?? 'none given'}`;
  });
  return [KEPT_NOTICE_LEAD, ...lines, 'Tell the customer the outcome.'].join('\n');
}

function shown(output: JsonValue): string {
  return typeof output === 'string' ? output : readableJson(output);
}

/** Who posts countersign's own notices into a session: never a raiser of what follows. */
export const NOTICE_POSTER = 'countersign';
