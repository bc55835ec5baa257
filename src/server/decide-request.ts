import type { TurnResult } from '../agent/views.ts';
import type { JsonValue } from '../core/json.ts';
import type { RequestDecision } from '../requests/request-desk.ts';
import type { Identity } from './auth/identity.ts';
import type { ServerContext } from './server-context.ts';

export interface DecisionBody {
  approved: boolean;
  reason?: string | undefined;
  remember?: 'tool' | 'tool-with-args' | undefined;
  /** Approve with changes: argument fields and their new values (see RequestDecision.edit). */
  edit?: Record<string, unknown> | undefined;
  /** Anything else the client sent (arguments, another tool, a name): ignored, and audited. */
  extra: Record<string, unknown>;
}

/**
 * A client's verdict as the one decide path takes it. Everything else the client sent is
 * passed through so the agent writes its `tamper.ignored` audit entry; a client-sent `by` is
 * renamed `sentBy`, since `by` is ours to set from the authenticated identity.
 */
export function verdictOf(body: DecisionBody): RequestDecision {
  const { by: sentBy, ...extra } = body.extra;
  return {
    approved: body.approved,
    ...(body.reason !== undefined ? { reason: body.reason } : {}),
    ...(body.remember !== undefined ? { remember: body.remember } : {}),
    ...(body.edit !== undefined ? { edit: body.edit as Record<string, JsonValue> } : {}),
    extra: { ...extra, ...(sentBy !== undefined ? { sentBy } : {}) },
  };
}

/**
 * A verdict on a tool call, as the older `/v1/approvals/{id}/decision` and the inbox's
 * approve/reject forms send it, answered in their shape (the agent's turn). It goes the one
 * way every decision goes (ctx.requests); who decides is the authenticated identity.
 */
export async function decideToolCall(
  ctx: Pick<ServerContext, 'requests'>,
  identity: Identity,
  requestId: string,
  body: DecisionBody,
): Promise<TurnResult> {
  const outcome = await ctx.requests.decide(
    requestId,
    verdictOf(body),
    { by: identity.name, roles: identity.roles },
    { only: 'tool-call' },
  );
  // A tool call's decision always yields the agent's turn.
  return outcome.turn as TurnResult;
}
