import { listPending, showRequest } from '../agent/queries.ts';
import { type ApprovalView, type TurnResult, toApprovalView } from '../agent/views.ts';
import type { ApprovalStatus } from '../core/approval.ts';
import type { Store } from '../store/store.ts';
import type { AgentRegistry } from './agent-registry.ts';

/** A request as the HTTP API and the inbox show it: the library's view plus who and what may decide. */
export interface HttpApprovalView extends ApprovalView {
  agent: string;
  /** The model's id of the call, to find it in the conversation. */
  callId: string | null;
  /** The session's principal: the customer the call is for. */
  customer: string | null;
  /** The role an approver needs to decide it; null when any approver may. */
  requiredRole: string | null;
  /** Whether "always for this session" may be chosen for this tool. */
  standingAllowed: boolean;
  /** Whether the raiser and the customer may decide it themselves (the agent's `selfApproval`). */
  selfApproval: boolean;
}

export interface ApprovalQuery {
  status?: ApprovalStatus;
  session?: string;
  tool?: string;
  /** Only requests that are no longer pending (the history). */
  decided?: boolean;
  limit?: number;
}

export async function enrich(
  store: Store,
  agents: AgentRegistry,
  views: ApprovalView[],
): Promise<HttpApprovalView[]> {
  const customers = new Map<string, string | null>();
  const out: HttpApprovalView[] = [];
  for (const view of views) {
    if (!customers.has(view.session))
      customers.set(view.session, (await store.getSession(view.session))?.principal ?? null);
    const request = await store.getApproval(view.id);
    const agent = request?.agent ?? agents.default.name;
    const tool = agents.tool(agent, view.tool);
    out.push({
      ...view,
      agent,
      callId: request?.callId ?? null,
      customer: customers.get(view.session) ?? null,
      requiredRole: tool?.role ?? null,
      standingAllowed: tool?.standing ?? false,
      selfApproval: agents.all.find((known) => known.name === agent)?.options.selfApproval ?? false,
    });
  }
  return out;
}

/**
 * Pending requests oldest first (overdue ones are never "pending"); decided ones newest
 * decision first, which is how the history is read.
 */
export async function queryApprovals(
  store: Store,
  agents: AgentRegistry,
  query: ApprovalQuery,
  now: Date,
): Promise<HttpApprovalView[]> {
  const filter = {
    ...(query.session ? { session: query.session } : {}),
    ...(query.tool ? { tool: query.tool } : {}),
  };
  let views: ApprovalView[];
  if (query.status === 'pending') {
    views = await listPending(store, filter, now);
  } else {
    const at = now.toISOString();
    const rows = await store.listApprovals(filter);
    views = rows
      .map((row) => toApprovalView(row, at))
      .filter((view) =>
        query.status === undefined
          ? !query.decided || view.status !== 'pending'
          : view.status === query.status,
      )
      .sort((a, b) => decidedAt(b).localeCompare(decidedAt(a)));
  }
  return enrich(store, agents, views.slice(0, query.limit ?? views.length));
}

export async function getApproval(
  store: Store,
  agents: AgentRegistry,
  id: string,
  now: Date,
): Promise<HttpApprovalView> {
  const [view] = await enrich(store, agents, [await showRequest(store, id, now)]);
  return view!;
}

function decidedAt(view: ApprovalView): string {
  return view.decision?.at ?? view.expiresAt;
}

/** A turn as the API returns it: the waiting requests in the same shape as everywhere else. */
export interface HttpTurnResult extends Omit<TurnResult, 'approvals'> {
  approvals: HttpApprovalView[];
}

export async function enrichTurn(
  store: Store,
  agents: AgentRegistry,
  turn: TurnResult,
): Promise<HttpTurnResult> {
  return { ...turn, approvals: await enrich(store, agents, turn.approvals) };
}
