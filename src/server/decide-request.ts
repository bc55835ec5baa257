import type { DecideInput } from '../agent/create-agent.ts';
import type { TurnResult } from '../agent/views.ts';
import { ForbiddenError } from '../core/errors/forbidden-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import type { Store } from '../store/store.ts';
import type { AgentRegistry } from './agent-registry.ts';
import { hasRole, type Identity } from './auth/identity.ts';

export interface DecisionBody {
  approved: boolean;
  reason?: string | undefined;
  remember?: 'tool' | 'tool-with-args' | undefined;
  /** Anything else the client sent (arguments, another tool, a name): ignored, and audited. */
  extra: Record<string, unknown>;
}

/**
 * The server's one decide path (API and inbox alike). Who decides is the authenticated
 * identity; the role a tool asks for and "never your own request" are checked here, then
 * the agent takes the decision once and runs the stored call.
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
  const role = agents.tool(request.agent, request.tool)?.role;
  if (role !== undefined && !hasRole(identity, role)) {
    throw new ForbiddenError(
      `Deciding ${request.tool} needs the ${role} role; ${identity.name} has ${identity.roles.length ? identity.roles.join(', ') : 'no roles'}.`,
      { hint: `Ask someone with the ${role} role.` },
    );
  }
  const session = await store.getSession(request.session);
  if (session?.principal != null && session.principal === identity.name) {
    throw new ForbiddenError(`${identity.name} cannot decide a request raised in their own session.`, {
      hint: 'Someone else must approve it.',
    });
  }
  // Passed through so the agent writes its `tamper.ignored` audit entry; a client-sent `by`
  // is renamed, since `by` is ours to set from the authenticated identity.
  const { by: sentBy, ...extra } = body.extra;
  const input = {
    ...extra,
    ...(sentBy !== undefined ? { sentBy } : {}),
    approved: body.approved,
    by: identity.name,
    ...(body.reason !== undefined ? { reason: body.reason } : {}),
    ...(body.remember !== undefined ? { remember: body.remember } : {}),
  } as DecideInput;
  return agent.decide(requestId, input);
}
