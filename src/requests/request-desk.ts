import { z } from 'zod';
import type { Agent, DecideInput } from '../agent/create-agent.ts';
import type { TurnResult } from '../agent/views.ts';
import type { ApprovalRequest, RequestKind } from '../core/approval.ts';
import type { Decider, RequestParties } from '../core/decision-rights.ts';
import { CountersignError } from '../core/errors/countersign-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import type { JsonValue } from '../core/json.ts';
import { escalationInForce } from '../core/nudges.ts';
import type { SessionRecord } from '../core/session.ts';
import { ATTR, SPAN, withSpan } from '../core/tracing.ts';
import type { Workflow } from '../workflow/define-workflow.ts';
import type { RunView } from '../workflow/run-view.ts';
import type { WorkflowRunner } from '../workflow/runner.ts';
import { approvalAnswer, type ResponseSchema } from './answer-shape.ts';
import { type ClaimStore, claimRequest, releaseRequest } from './claims.ts';
import type { RequestReader } from './request-books.ts';

/**
 * A person's word on a request of either kind. A tool call is approved or rejected; a port
 * request is answered with data that fits its port, or, when the port is approval-shaped,
 * approved or rejected the same way (see answer-shape.ts).
 */
export type RequestDecision =
  | {
      approved: boolean;
      reason?: string;
      remember?: 'tool' | 'tool-with-args';
      /**
       * Approve with changes: argument fields and their new values. Only the request's
       * `editable` fields; the tool never changes. The edited call is validated, hashed,
       * authorized and routed again before it runs (NOT_EDITABLE, INVALID_INPUT, or a
       * request that now waits for another role or more approvers).
       */
      edit?: Record<string, JsonValue>;
      /** Anything else a client sent; the agent audits it as ignored. */
      extra?: Record<string, unknown>;
    }
  | { response: JsonValue };

/** Who decides, with the roles they authenticated (undefined: not known here, as on the CLI). */
export interface RequestDecider {
  by: string;
  roles?: readonly string[];
}

/** What deciding led to: the request as it stands now, the session's turn, the run. */
export interface RequestOutcome {
  /**
   * The request as it stands now, read when asked: a caller that answers with the turn alone
   * (the older /v1/approvals route, the CLI) reads the row once per decision.
   */
  request(): Promise<ApprovalRequest>;
  /** The agent's turn after a tool call was decided; null for a port request. */
  turn: TurnResult | null;
  /** The run after it continued: a port request's, or the run whose agent made the call. */
  run: RunView | null;
}

export interface RequestDeskOptions {
  store: Pick<RequestReader, 'getApproval' | 'getApprovalWithSession'>;
  /**
   * Where claims are kept (the server's or CLI's Store); without it, claiming is refused.
   * Claims run on its clock (its `liveness`: PostgreSQL's server clock), else on `now`.
   */
  timers?: ClaimStore;
  now?: () => Date;
  /** The agent that raised a tool call (by the row's `agent`). */
  agentFor: (name: string) => Agent | Promise<Agent>;
  /** The runs, when the app has workflows: port requests are answered through it. */
  runner?: WorkflowRunner | null;
  workflows?: readonly Workflow[];
}

/**
 * The one way a person's decision reaches a request, for every surface (API, inbox, CLI):
 * it reads the row once, and hands it to the path its kind has — the agent's decide for a
 * tool call (binding, decided-once, executed-once, separation of duties are the agent's), the
 * runner's answer for a port request (the same rules, the runner's side) — then continues
 * the run the request belongs to.
 */
export interface RequestDesk {
  /** The request, or NOT_FOUND with what to do. */
  get(id: string): Promise<ApprovalRequest>;
  /** A port's answer schema as JSON Schema (null for a tool call, or a workflow this app lacks). */
  responseSchema(request: Pick<ApprovalRequest, 'kind' | 'agent' | 'tool'>): ResponseSchema | null;
  /**
   * A port request's escalation as its answer is judged (escalationInForce, with the port as
   * configured now), for views; null for a tool call (the agent's tool decides those).
   */
  portEscalation(
    request: Pick<ApprovalRequest, 'kind' | 'agent' | 'tool' | 'escalatedTo' | 'createdAt'>,
  ): string | null;
  /**
   * `only`: refuse, before anything is recorded, a request of the other kind (a route that
   * answers in one kind's shape). `run`: refuse, as NOT_FOUND, a request of another run (the
   * older addresses that name the run).
   */
  decide(
    id: string,
    decision: RequestDecision,
    decider: RequestDecider,
    options?: { only?: RequestKind; run?: string },
  ): Promise<RequestOutcome>;
  /**
   * Takes the request for `decider` for `forMs` (default 15 minutes), or renews their claim:
   * others see who holds it and until when. Whoever may decide it may claim it; deciding
   * never needs a claim (see claims.ts).
   */
  claim(id: string, decider: RequestDecider, options?: { forMs?: number }): Promise<ApprovalRequest>;
  /** Gives back `decider`'s claim (a no-op when nobody holds it). */
  release(id: string, decider: RequestDecider): Promise<ApprovalRequest>;
}

export function createRequestDesk(options: RequestDeskOptions): RequestDesk {
  const workflows = new Map((options.workflows ?? []).map((workflow) => [workflow.name, workflow]));
  const schemas = new Map<string, ResponseSchema | null>();

  const notFound = (id: string) =>
    new NotFoundError(`There is no request ${id}.`, {
      hint: 'List the waiting ones with `countersign pending` (or GET /v1/requests).',
    });
  const get = async (id: string) => {
    const request = await options.store.getApproval(id);
    if (!request) throw notFound(id);
    return request;
  };
  /** The row and its session in one read where the store can (deciding a tool call needs both). */
  const getWithSession = async (
    id: string,
  ): Promise<{ request: ApprovalRequest; session?: SessionRecord }> => {
    if (options.store.getApprovalWithSession === undefined) return { request: await get(id) };
    const found = await options.store.getApprovalWithSession(id);
    if (!found) throw notFound(id);
    return found.session === null
      ? { request: found.request }
      : { request: found.request, session: found.session };
  };

  const responseSchema = (
    request: Pick<ApprovalRequest, 'kind' | 'agent' | 'tool'>,
  ): ResponseSchema | null => {
    if (request.kind !== 'port') return null;
    const key = `${request.agent}\n${request.tool}`;
    if (!schemas.has(key)) {
      const node = workflows.get(request.agent)?.nodes.get(request.tool);
      schemas.set(
        key,
        node?.kind === 'port'
          ? (z.toJSONSchema(node.response, { target: 'draft-7', io: 'input' }) as unknown as ResponseSchema)
          : null,
      );
    }
    return schemas.get(key) ?? null;
  };

  /** Continues the run a decided request belongs to; another process on it does so itself. */
  const continueRun = async (run: string): Promise<RunView | null> => {
    if (!options.runner) return null;
    try {
      return await options.runner.resume(run);
    } catch (error) {
      if (CountersignError.is(error) && error.code === 'SESSION_BUSY') return null;
      throw error;
    }
  };

  const runnerFor = (request: ApprovalRequest): WorkflowRunner => {
    if (
      !options.runner ||
      request.run === null ||
      (request.kind === 'port' && !workflows.has(request.agent))
    ) {
      throw new NotFoundError(
        `Request ${request.id} belongs to run ${request.run ?? '-'} of a workflow this app does not run.`,
        { hint: 'Answer it where the app with that workflow runs (COUNTERSIGN_APP).' },
      );
    }
    return options.runner;
  };

  const answerOf = (request: ApprovalRequest, decision: RequestDecision): JsonValue => {
    if ('response' in decision) return decision.response;
    // A port keeps no standing rules and takes no fields beside its answer: refused, not
    // dropped, so a person is never told "always" or a field of theirs was taken when it was not.
    const extras = [...Object.keys(decision.extra ?? {}), ...(decision.edit !== undefined ? ['edit'] : [])];
    if (decision.remember !== undefined || extras.length > 0) {
      throw new InvalidInputError(
        `Request ${request.id} waits at port ${request.tool}: ${decision.remember !== undefined ? 'remember applies to tool calls only' : `it takes no ${extras.join(', ')}`}. Nothing was recorded.`,
        {
          hint: `Send {"approved": true|false, "reason"?: "…"}, or the answer as {"response": …} to POST /v1/requests/${request.id}/decision.`,
        },
      );
    }
    const schema = responseSchema(request);
    const answer = schema ? approvalAnswer(schema, decision.approved, decision.reason) : null;
    if (answer === null) {
      throw new InvalidInputError(
        `Request ${request.id} waits at port ${request.tool}, whose answer is not a plain approve or reject.`,
        {
          hint: `Send the answer as JSON that fits the port: countersign answer ${request.id} JSON (or {"response": …} to POST /v1/requests/${request.id}/decision).`,
        },
      );
    }
    return answer;
  };

  const timers = () => {
    if (!options.timers)
      throw new InvalidInputError('This store keeps no claims (a file store of workflow runs keeps none).', {
        hint: 'Keep runs in a SQLite or PostgreSQL store (COUNTERSIGN_STORE) to claim their requests.',
      });
    return options.timers;
  };
  const now = options.now ?? (() => new Date());
  const deciderOf = (decider: RequestDecider): Decider => ({
    name: decider.by.trim() || 'unknown',
    roles: decider.roles ?? null,
  });
  /** The parties a claim is judged by: the row's, with the agent's selfApproval and the tool's role for older rows. */
  const portOf = (request: Pick<ApprovalRequest, 'agent' | 'tool'>) => {
    const node = workflows.get(request.agent)?.nodes.get(request.tool);
    return node?.kind === 'port' ? node : undefined;
  };
  const portEscalation: RequestDesk['portEscalation'] = (request) =>
    request.kind === 'port' ? escalationInForce(request, portOf(request)?.nudges, now()) : null;
  const partiesOf = async (request: ApprovalRequest): Promise<RequestParties> => {
    if (request.kind === 'port') {
      const port = portOf(request);
      return {
        raisedBy: request.raisedBy,
        customer: request.customer,
        // As the runner's answer judges it: the port's own role as configured now wins over
        // the row's, so an edited row cannot lower who may claim (the runner checks both).
        requiredRole: port?.role ?? request.requiredRole ?? null,
        escalatedTo: portEscalation(request),
        selfApproval: false,
      };
    }
    const agent = await options.agentFor(request.agent);
    const tool = agent.tools.find((known) => known.name === request.tool);
    return {
      raisedBy: request.raisedBy,
      customer: request.customer,
      // As the decision judges it (create-agent.ts): the tool's role as configured now.
      requiredRole: tool ? (tool.role ?? null) : request.requiredRole,
      escalatedTo: escalationInForce(request, tool?.nudges, now()),
      selfApproval: agent.options.selfApproval ?? false,
    };
  };

  return {
    get,
    responseSchema,
    portEscalation,
    async claim(id, decider, claimOptions = {}) {
      const request = await get(id);
      return claimRequest(timers(), request, await partiesOf(request), deciderOf(decider), {
        now: now(),
        ...(claimOptions.forMs === undefined ? {} : { forMs: claimOptions.forMs }),
      });
    },
    async release(id, decider) {
      return releaseRequest(timers(), await get(id), deciderOf(decider), { now: now() });
    },
    async decide(id, decision, decider, decideOptions = {}) {
      const { request, session } = await getWithSession(id);
      if (decideOptions.run !== undefined && request.run !== decideOptions.run) {
        throw new NotFoundError(`Run ${decideOptions.run} has no request ${id}.`, {
          hint: `Read the run with GET /v1/runs/${decideOptions.run}; answer with POST /v1/requests/{id}/decision.`,
        });
      }
      if (decideOptions.only !== undefined && request.kind !== decideOptions.only) {
        throw new InvalidInputError(
          request.kind === 'port'
            ? `Request ${id} is a workflow request (port ${request.tool} of run ${request.run}), not a tool call.`
            : `Request ${id} is a tool call, not a workflow request.`,
          { hint: `Decide it with POST /v1/requests/${id}/decision, which takes both kinds.` },
        );
      }
      if (request.kind === 'port') {
        const runner = runnerFor(request);
        // Tool calls get their decision span in agent.decide; a port's answer gets it here.
        const attributes = {
          [ATTR.requestId]: id,
          [ATTR.requestKind]: 'port',
          [ATTR.run]: request.run,
          [ATTR.tool]: request.tool,
        };
        const run = await withSpan(SPAN.requestDecide, attributes, () =>
          runner.answer(id, answerOf(request, decision), {
            by: decider.by,
            ...(decider.roles ? { roles: decider.roles } : {}),
          }),
        );
        return { request: () => get(id), turn: null, run };
      }
      if ('response' in decision && request.run !== null) {
        // A call of an agent inside a run, answered as the run's request ({approved, reason}):
        // the runner decides it through the agent and continues the run.
        const run = await runnerFor(request).answer(id, decision.response, {
          by: decider.by,
          ...(decider.roles ? { roles: decider.roles } : {}),
        });
        return { request: () => get(id), turn: null, run };
      }
      if ('response' in decision) {
        throw new InvalidInputError(`Request ${id} is a tool call: approve or reject it.`, {
          hint: 'Send {"approved": true} or {"approved": false, "reason": "…"}.',
        });
      }
      const agent = await options.agentFor(request.agent);
      const input = {
        ...(decision.extra ?? {}),
        approved: decision.approved,
        by: decider.by,
        ...(decider.roles ? { roles: decider.roles } : {}),
        ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
        ...(decision.remember !== undefined ? { remember: decision.remember } : {}),
        ...(decision.edit !== undefined ? { edit: decision.edit } : {}),
      } as DecideInput;
      // The row and its session read here are handed on, so the agent reads neither again.
      const turn = await agent.decide(id, input, { request, ...(session ? { session } : {}) });
      const run = request.run === null ? null : await continueRun(request.run);
      return { request: () => get(id), turn, run };
    },
  };
}
