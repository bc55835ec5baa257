import { showRequest } from '../agent/queries.ts';
import { type ApprovalView, type TurnResult, toApprovalView } from '../agent/views.ts';
import { escalationInForce } from '../core/nudges.ts';
import type { ResponseSchema } from '../requests/answer-shape.ts';
import type { RequestReader } from '../requests/request-books.ts';
import type { RequestDesk } from '../requests/request-desk.ts';
import { type ApprovalQuery, toPageQuery } from '../requests/request-list.ts';
import type { PageTotal } from '../store/store.ts';

export { type ApprovalQuery, toPageQuery } from '../requests/request-list.ts';

import type { AgentRegistry } from './agent-registry.ts';

/**
 * A request of either kind as the HTTP API and the inbox show it: the library's view plus
 * who and what may decide. Built from the row alone: listing N requests reads N rows, nothing
 * else.
 */
export interface HttpApprovalView extends Omit<ApprovalView, 'callId'> {
  /** The model's id of the call, to find it in the conversation (the asking executor for a port). */
  callId: string | null;
  /** Whether "always for this session" may be chosen for this tool (never for a port). */
  standingAllowed: boolean;
  /** Whether the raiser and the customer may decide it themselves (the agent's `selfApproval`). */
  selfApproval: boolean;
  /** A port request's answer schema as JSON Schema, so a form can be drawn; null for a tool call. */
  responseSchema: ResponseSchema | null;
}

/** The one request resource: `/v1/requests` and the inbox show both kinds in this shape. */
export type HttpRequestView = HttpApprovalView;

/** A page of requests as the API and the inbox show them. */
export interface HttpRequestPage {
  items: HttpApprovalView[];
  next: string | null;
  total?: PageTotal;
}

/** Where a view's decision rules and answer form come from: the app's agents and workflows. */
export interface ViewSources {
  agents: AgentRegistry;
  requests: Pick<RequestDesk, 'responseSchema' | 'portEscalation'>;
  /** The server's clock: whether an escalation is in force yet (the wall clock without one). */
  now?: () => Date;
}

export function toHttpView(view: ApprovalView, sources: ViewSources): HttpApprovalView {
  if (view.kind === 'port') {
    return {
      ...view,
      // As the answer judges it: only the escalation the port (as configured now) makes.
      escalatedTo: sources.requests.portEscalation(view),
      standingAllowed: false,
      selfApproval: false,
      responseSchema: sources.requests.responseSchema(view) ?? {},
    };
  }
  const known = sources.agents.all.find((agent) => agent.name === view.agent);
  const tool = known ? sources.agents.tool(view.agent, view.tool) : undefined;
  return {
    ...view,
    // Rows written before roles were recorded take the tool's role as configured now.
    requiredRole: view.requiredRole ?? tool?.role ?? null,
    // As the decision judges it: only the escalation the tool (as configured now) makes.
    escalatedTo: escalationInForce(view, tool?.nudges, sources.now?.() ?? new Date()),
    standingAllowed: tool?.standing ?? false,
    selfApproval: known?.options.selfApproval ?? false,
    responseSchema: null,
  };
}

export function enrich(sources: ViewSources, views: ApprovalView[]): HttpApprovalView[] {
  return views.map((view) => toHttpView(view, sources));
}

/**
 * One page of requests: pending oldest first, decided ones latest decision first (how the
 * history is read), with the cursor of the next page. Reads `limit + 1` rows, never all.
 */
export async function pageApprovals(
  store: RequestReader,
  sources: ViewSources,
  query: ApprovalQuery,
  now: Date,
): Promise<HttpRequestPage> {
  const page = await store.pageRequests(toPageQuery(query, now));
  const at = now.toISOString();
  return {
    items: enrich(
      sources,
      page.items.map((row) => toApprovalView(row, at)),
    ),
    next: page.next,
    ...(page.total === undefined ? {} : { total: page.total }),
  };
}

/** The first page's items (at most `query.limit`, default MAX_PAGE_LIMIT). */
export async function queryApprovals(
  store: RequestReader,
  sources: ViewSources,
  query: ApprovalQuery,
  now: Date,
): Promise<HttpApprovalView[]> {
  return (await pageApprovals(store, sources, query, now)).items;
}

export async function getApproval(
  store: RequestReader,
  sources: ViewSources,
  id: string,
  now: Date,
): Promise<HttpApprovalView> {
  return toHttpView(await showRequest(store, id, now), sources);
}

/** A turn as the API returns it: the waiting requests in the same shape as everywhere else. */
export interface HttpTurnResult extends Omit<TurnResult, 'approvals'> {
  approvals: HttpApprovalView[];
}

export function enrichTurn(sources: ViewSources, turn: TurnResult): HttpTurnResult {
  return { ...turn, approvals: enrich(sources, turn.approvals) };
}
