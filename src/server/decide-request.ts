import type { DecideInput } from '../agent/create-agent.ts';
import type { TurnResult } from '../agent/views.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import type { Store } from '../store/store.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { Identity } from './auth/identity.ts';

export interface DecisionBody {
  approved: boolean;
  reason?: string | undefined;
  remember?: 'tool' | 'tool-with-args' | undefined;
  /** Anything else the client sent (arguments, another tool, a name): ignored, and audited. */
  extra: Record<string, unknown>;
}

/**
 * The server's one decide path (API and inbox alike). Who decides is the authenticated
 * identity, with its roles; the agent checks who may decide (decision-rights.ts), takes the
 * decision once and runs the stored call.
 */
export async function decideRequest(
  store: Store,
  agents: AgentRegistry,
  identity: Identity,
  requestId: string,
  body: DecisionBody,
): Promise<TurnResult> {
  const request = await store.getApproval(requestId);
  if (!request) throw new NotFoundError(`No approval request ${requestId}.`);
  const agent = agents.get(request.agent);
  // Passed through so the agent writes its `tamper.ignored` audit entry; a client-sent `by`
  // is renamed, since `by` is ours to set from the authenticated identity.
  const { by: sentBy, ...extra } = body.extra;
  const input = {
    ...extra,
    ...(sentBy !== undefined ? { sentBy } : {}),
    approved: body.approved,
    by: identity.name,
    // Who may decide (the tool's role, never the raiser or the customer) is the agent's rule.
    roles: identity.roles,
    ...(body.reason !== undefined ? { reason: body.reason } : {}),
    ...(body.remember !== undefined ? { remember: body.remember } : {}),
  } as DecideInput;
  // The row read here to find the agent is handed on, so the agent does not read it again.
  return agent.decide(requestId, input, { request });
}
