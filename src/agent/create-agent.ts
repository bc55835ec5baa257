import type { ApprovalRequest, Decision } from '../core/approval.ts';
import { DEFAULT_REJECTION_REASON } from '../core/approval.ts';
import { canonicalJson } from '../core/canonical-json.ts';
import { bindingError, bindingProblem, toolCallBinding } from '../core/check-binding.ts';
import { claimOverridden } from '../core/claims.ts';
import { assertMayDecide } from '../core/decision-rights.ts';
import { parseDuration } from '../core/duration.ts';
import { AlreadyDecidedError } from '../core/errors/already-decided-error.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { ExpiredError } from '../core/errors/expired-error.ts';
import { ForbiddenError } from '../core/errors/forbidden-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import { newId, userIdPattern } from '../core/ids.ts';
import type { JsonValue } from '../core/json.ts';
import { defaultWarningMs, escalationInForce } from '../core/nudges.ts';
import type { SessionRecord } from '../core/session.ts';
import { signalDecision } from '../core/signals.ts';
import { ATTR, activeSpan, SPAN, setSpanAttributes, withSpan } from '../core/tracing.ts';
import { emit } from '../events/emit.ts';
import type { EventBus } from '../events/event-bus.ts';
import type { ModelCallHooks } from '../model/call-model.ts';
import type { AnyLanguageModel } from '../model/language-model.ts';
import { type RetryOptions, retryPolicy } from '../model/retry-policy.ts';
import { toModelTools } from '../model/to-model-tools.ts';
import type { ContinuationQueue } from '../queue/continuation-queue.ts';
import type { AppState } from '../store/ports/app-state.ts';
import type { StandingRule, Store } from '../store/store.ts';
import type { Tool, ToolState } from '../tools/define-tool.ts';
import { type AgentTools, normalizeTools } from '../tools/normalize-tools.ts';
import type { AutoApprovalRule } from './auto-approval-rule.ts';
import { faultPoint } from './fault-point.ts';
import { acquireSessionLease, keepLease, newLeaseOwner } from './lease.ts';
import type { AgentRuntime } from './runtime.ts';
import { expireRequest, SessionRun } from './session-run.ts';
import type { TurnResult } from './views.ts';

export interface AgentOptions {
  name: string;
  /** The system prompt. */
  instructions: string;
  /**
   * defineTool tools and AI SDK `tool({...})` definitions, as an array or as a record keyed
   * by name (the AI SDK's shape). Read once here: a wrong shape is a CONFIG_ERROR.
   */
  tools: AgentTools;
  /** Any AI SDK language model (specification v3 or v4). Can also be given later with `with`. */
  model?: AnyLanguageModel;
  store?: Store;
  /** The workflow run this agent acts in (set by agentExecutor): its tool calls' rows carry it. */
  run?: string;
  /**
   * Tries of a failed model call: on by default (3 tries, 0.5 s doubling to at most 8 s) for
   * dropped connections, cut streams, 429 and 5xx. `false` turns it off.
   */
  retry?: RetryOptions | false;
  /** Stream every model call, also when no one listens (models that only implement doStream). */
  stream?: boolean;
  /** Cap on model steps in one turn (default 12). */
  maxSteps?: number;
  /** Approvals given by code, checked after the session's standing approvals; first match wins. */
  autoApprove?: AutoApprovalRule[];
  /**
   * Surface one request at a time: the rest of a response's calls wait and are checked
   * against the rules again before they surface, so "always" on the first can cover them.
   */
  oneAtATime?: boolean;
  /** Model steps in a row that rules may approve entirely before a person is asked (default 40). */
  maxAutoApprovedSteps?: number;
  /** How long a request waits for a decision: '2s', '15m', '24h' (default COUNTERSIGN_APPROVAL_TTL or 24h). */
  approvalTtl?: string | number;
  /**
   * Warn this long before a request expires (`request.expiring`) when its tool sets no
   * `warnBefore`: '30m', '1h' (default COUNTERSIGN_WARN_BEFORE, else no warning).
   */
  warnBefore?: string | number;
  /**
   * The session lease's term (default 20s). A running process renews it every third of a
   * term; one that died lets go within a term (at once on the same host).
   */
  leaseMs?: number;
  /** How long a second run waits for a busy session before SESSION_BUSY (default 15s). */
  busyWaitMs?: number;
  /** The clock; tests move it to exercise expiry. */
  now?: () => Date;
  /** Where to announce new requests, decisions, executions and finished turns. */
  events?: EventBus;
  /**
   * Hand the continuation after a decision or reconciliation to a worker (`countersign worker`)
   * instead of running it inline: `decide` and `reconcile` then enqueue the session once the
   * decision commits and answer `status: 'continuing'` at once. Unset: they run it inline.
   */
  continuations?: ContinuationQueue;
  /**
   * Let the person who raised a request (and the session's customer) decide it themselves:
   * for an assistant someone approves for their own use, like the kitchen console. Off by
   * default: on a support desk the customer and whoever posted for them never decide.
   */
  selfApproval?: boolean;
}

export interface DecideInput {
  approved: boolean;
  /** Sent to the model on rejection. Think of two readers: the model and the customer. */
  reason?: string;
  /** Who decided. The server sets it from the authenticated approver, never from input. */
  by?: string;
  /**
   * The decider's roles, when the caller authenticated them (the server does): checked
   * against the tool's `role`. Undefined: not known here, so no role is checked (the CLI).
   */
  roles?: readonly string[];
  /**
   * Approve later matching calls on this session without asking: 'tool' for any arguments,
   * 'tool-with-args' for exactly these. Refused for tools declared `standing: false`.
   */
  remember?: 'tool' | 'tool-with-args';
}

export interface ChatOptions extends ModelCallHooks {
  principal?: string | null;
  /**
   * Who posted it (the authenticated caller): requests raised answering it record it as
   * their raiser, who may not decide them.
   */
  by?: string;
}

export interface Agent {
  readonly name: string;
  readonly tools: readonly Tool[];
  readonly options: Readonly<AgentOptions>;
  /** The same agent bound to another model or store. */
  with(runtime: {
    model?: AnyLanguageModel;
    store?: Store;
    events?: EventBus;
    continuations?: ContinuationQueue;
    run?: string;
  }): Agent;
  /**
   * Send a user message. Any request still waiting is answered "moved on" first. `by` is who
   * posted it (see ChatOptions). `onText` receives the reply as the model generates it (the
   * model is then streamed).
   */
  chat(session: string, text: string, options?: ChatOptions): Promise<TurnResult>;
  /**
   * Decide a waiting request by id; the stored call runs, then the session continues.
   * `read.request` is the request as the caller just read it from this agent's store (the
   * server does, to find the agent), so it is not read again; the decision itself is still
   * the store's compare-and-set on the stored row, and what runs is the stored row.
   */
  decide(requestId: string, input: DecideInput, read?: { request?: ApprovalRequest }): Promise<TurnResult>;
  approve(requestId: string, options?: { by?: string; reason?: string }): Promise<TurnResult>;
  reject(requestId: string, options?: { by?: string; reason?: string }): Promise<TurnResult>;
  /** Continue a session after a failed or interrupted run, without a new message. */
  resume(session: string): Promise<TurnResult>;
  /** Settle an approved call whose outcome is unknown, then continue its session. */
  reconcile(
    requestId: string,
    input: { outcome: 'succeeded' | 'failed'; result?: JsonValue; by?: string; roles?: readonly string[] },
  ): Promise<TurnResult>;
}

export function createAgent(options: AgentOptions): Agent {
  if (!userIdPattern.test(options.name)) {
    throw new ConfigError(`Agent name "${options.name}" must use letters, digits and . _ : @ - only.`);
  }
  const tools = normalizeTools(options.name, options.tools);
  let runtime: AgentRuntime | undefined;

  const getRuntime = (): AgentRuntime => {
    if (runtime) return runtime;
    const { model, store } = options;
    if (!model)
      throw new ConfigError(`Agent ${options.name} has no model.`, {
        hint: 'Pass `model` to createAgent or use agent.with({ model }).',
      });
    if (!store)
      throw new ConfigError(`Agent ${options.name} has no store.`, {
        hint: 'Pass `store` to createAgent or use agent.with({ store }).',
      });
    runtime = {
      agentName: options.name,
      run: options.run ?? null,
      instructions: options.instructions,
      model,
      modelCall: { retry: retryPolicy(options.retry), stream: options.stream ?? false },
      store,
      toolsByName: new Map(tools.map((tool) => [tool.name, tool])),
      modelTools: toModelTools(
        tools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          inputSchema: tool.jsonSchema,
        })),
      ),
      state: stateOf(store, options.name),
      maxSteps: options.maxSteps ?? 12,
      autoApprove: options.autoApprove ?? [],
      oneAtATime: options.oneAtATime ?? false,
      maxAutoApprovedSteps: options.maxAutoApprovedSteps ?? 40,
      approvalTtlMs: parseDuration(
        options.approvalTtl ?? process.env.COUNTERSIGN_APPROVAL_TTL ?? '24h',
        'approval TTL',
      ),
      warnBeforeMs: defaultWarningMs(options.warnBefore),
      leaseMs: options.leaseMs ?? 20_000,
      busyWaitMs: options.busyWaitMs ?? 15_000,
      now: options.now ?? (() => new Date()),
      events: options.events,
    };
    return runtime;
  };

  /**
   * Runs the session under its lease; loads the history once per run. `leasedAs` is an owner
   * that already holds the lease (taken with the decision, in the same transaction).
   */
  const runSession = async (
    sessionId: string,
    text: string | undefined,
    leasedAs?: string,
    hooks?: ModelCallHooks,
    by?: string,
    known?: KnownRows,
  ): Promise<TurnResult> => {
    const rt = getRuntime();
    const owner = leasedAs ?? newLeaseOwner();
    if (leasedAs === undefined)
      await acquireSessionLease(rt.store, sessionId, owner, { leaseMs: rt.leaseMs, waitMs: rt.busyWaitMs });
    const stopRenewing = keepLease(rt.store, sessionId, owner, rt.leaseMs);
    let run: SessionRun | undefined;
    try {
      const session = known?.session ?? (await rt.store.getSession(sessionId));
      if (!session) throw new NotFoundError(`Session ${sessionId} does not exist.`);
      const messages = (await rt.store.loadMessages(sessionId)).map((stored) => stored.message);
      const runtime = hooks ? { ...rt, modelCall: { ...rt.modelCall, hooks } } : rt;
      run = new SessionRun(runtime, owner, session, messages, known?.decided);
      const result = await run.run(text, by);
      emit(rt.events, {
        type: 'turn.finished',
        at: rt.now().toISOString(),
        session: sessionId,
        status: result.status,
        reply: result.reply,
      });
      return result;
    } finally {
      stopRenewing();
      // The run's last step usually released the lease with its commit.
      if (!run?.leaseReleased) await rt.store.releaseLease(sessionId, owner).catch(() => undefined);
    }
  };

  /** After a committed decision: inline, or handed to a worker when a queue is configured. */
  const continueSession = async (
    sessionId: string,
    reason: string,
    leasedAs?: string,
    known?: KnownRows,
  ): Promise<TurnResult> => {
    const queue = options.continuations;
    if (!queue) return runSession(sessionId, undefined, leasedAs, undefined, undefined, known);
    await queue.enqueue({ session: sessionId, reason });
    return { session: sessionId, status: 'continuing', reply: null, approvals: [], unknown: [] };
  };

  const agent: Agent = {
    name: options.name,
    tools,
    options,
    with: (overrides) => createAgent({ ...options, ...overrides }),

    async chat(sessionId, text, chatOptions = {}) {
      const rt = getRuntime();
      if (!userIdPattern.test(sessionId)) {
        throw new InvalidInputError(`Session id "${sessionId}" is not valid.`, {
          hint: 'Use 1-128 letters, digits and . _ : @ - characters.',
        });
      }
      if (typeof text !== 'string' || text.trim() === '') {
        throw new InvalidInputError('The message is empty.', { hint: 'Type what you want the agent to do.' });
      }
      const principal = chatOptions.principal ?? null;
      const session = await rt.store.ensureSession({
        id: sessionId,
        agent: rt.agentName,
        principal,
        at: rt.now().toISOString(),
      });
      if (session.agent !== rt.agentName) {
        throw new InvalidInputError(
          `Session ${sessionId} belongs to agent ${session.agent}, not ${rt.agentName}.`,
        );
      }
      if (chatOptions.principal !== undefined && session.principal !== principal) {
        throw new ForbiddenError(
          `Session ${sessionId} belongs to ${session.principal ?? 'no signed-in user'}, not ${principal ?? 'no signed-in user'}.`,
          {
            hint: 'Use a new session id for a different customer.',
          },
        );
      }
      const { onText, onRetry } = chatOptions;
      const by = chatOptions.by?.trim();
      return runSession(
        sessionId,
        text,
        undefined,
        onText || onRetry ? { onText, onRetry } : undefined,
        by ? by : undefined,
      );
    },

    async decide(requestId, input, read = {}) {
      const rt = getRuntime();
      const request = read.request?.id === requestId ? read.request : await rt.store.getApproval(requestId);
      if (!request)
        throw new NotFoundError(`No approval request ${requestId}.`, {
          hint: 'List waiting requests with `countersign pending`.',
        });
      if (request.agent !== rt.agentName)
        throw new InvalidInputError(`Request ${requestId} belongs to agent ${request.agent}.`);
      setSpanAttributes(activeSpan(), {
        [ATTR.session]: request.session,
        [ATTR.tool]: request.tool,
        [ATTR.run]: request.run,
      });
      const session = await assertMayAct(rt, request, input, 'decide');
      await auditIgnoredFields(rt, request, input);
      const unbound = bindingProblem(toolCallBinding(request));
      if (unbound !== null) {
        // Refused before the compare-and-set, and written down: the trail shows the attempt.
        await rt.store.appendAudit(
          [
            {
              kind: 'tamper.refused',
              session: request.session,
              requestId,
              actor: input.by?.trim() || 'unknown',
              data: { problem: unbound, argsHash: request.argsHash },
            },
          ],
          rt.now().toISOString(),
        );
        throw bindingError(requestId, unbound, 'deciding');
      }
      const at = rt.now().toISOString();
      if (request.status === 'pending' && request.expiresAt <= at) {
        await expireRequest(rt.store, request, at);
        throw expiredError(requestId, request.expiresAt);
      }
      const reason = input.reason?.trim() || (input.approved ? null : DEFAULT_REJECTION_REASON);
      const decision: Decision = {
        verdict: input.approved ? 'approved' : 'rejected',
        by: input.by?.trim() || 'unknown',
        reason,
        at,
        kind: 'person',
      };
      const rule = input.remember ? standingRule(rt, request, input.remember, decision) : undefined;
      // Continuing inline: the session's lease is taken in the decision's own transaction.
      const owner = options.continuations ? undefined : newLeaseOwner();
      // Leases run on the wall clock, as acquireSessionLease's do.
      const nowMs = Date.now();
      const lease = owner === undefined ? undefined : { owner, untilMs: nowMs + rt.leaseMs, nowMs };
      const outcome = await rt.store.decide(
        requestId,
        decision,
        [
          {
            kind: 'request.decided',
            session: request.session,
            requestId,
            actor: decision.by,
            data: {
              verdict: decision.verdict,
              reason,
              tool: request.tool,
              args: request.argsJson,
              argsHash: request.argsHash,
              ...(rule ? { remember: input.remember ?? null, rule: rule.id } : {}),
              ...claimOverridden(request, decision.by, at),
            },
          },
        ],
        { ...(rule ? { rule } : {}), ...(lease ? { lease } : {}) },
      );
      if (!outcome.won) {
        const current = outcome.request ?? request;
        if (current.status === 'expired' || (current.status === 'pending' && current.expiresAt <= at)) {
          throw expiredError(requestId, current.expiresAt);
        }
        if (current.decision) throw new AlreadyDecidedError(requestId, current.decision);
        throw new AlreadyDecidedError(requestId, {
          verdict: current.status === 'pending' ? 'rejected' : current.status,
          by: 'unknown',
          reason: null,
          at,
          kind: 'person',
        });
      }
      signalDecision(request, decision);
      emit(rt.events, {
        type: 'approval.decided',
        at,
        requestId,
        session: request.session,
        verdict: decision.verdict,
        by: decision.by,
        kind: decision.kind,
      });
      faultPoint('after-decision');
      if (!outcome.leased) return continueSession(request.session, 'decided');
      return continueSession(
        request.session,
        'decided',
        owner,
        session ? knownAfterDecision(session, outcome.request) : undefined,
      );
    },

    approve: (requestId, opts = {}) => agent.decide(requestId, { approved: true, ...opts }),
    reject: (requestId, opts = {}) => agent.decide(requestId, { approved: false, ...opts }),

    async resume(sessionId) {
      const rt = getRuntime();
      const session = await rt.store.getSession(sessionId);
      if (!session) throw new NotFoundError(`Session ${sessionId} does not exist.`);
      return runSession(sessionId, undefined);
    },

    async reconcile(requestId, input) {
      const rt = getRuntime();
      const execution = await rt.store.getExecution(requestId);
      if (!execution)
        throw new NotFoundError(`No execution for request ${requestId}.`, {
          hint: 'List them with `countersign executions`.',
        });
      if (execution.status === 'started') {
        throw new InvalidInputError(
          `The execution of ${requestId} is not marked unknown: it may still be running.`,
          {
            hint: `Run \`countersign resume ${execution.session}\` first; if its process is gone, the call is then marked unknown.`,
          },
        );
      }
      if (execution.status === 'succeeded' || execution.status === 'failed') {
        const at = execution.finishedAt ?? execution.startedAt;
        throw new AlreadyDecidedError(
          requestId,
          { verdict: 'approved', by: 'ledger', reason: null, at, kind: 'person' },
          `The execution of ${requestId} is already settled: ${execution.status} at ${at}.`,
        );
      }
      const raised = await rt.store.getApproval(requestId);
      if (raised) await assertMayAct(rt, raised, input, 'reconcile');
      const by = input.by?.trim() || 'unknown';
      const result =
        input.result ??
        (input.outcome === 'succeeded'
          ? 'Done (confirmed by a person).'
          : 'Not done (confirmed by a person).');
      await rt.store.finishExecution(requestId, {
        status: input.outcome,
        result,
        at: rt.now().toISOString(),
        audit: [
          {
            kind: 'execution.reconciled',
            session: execution.session,
            requestId,
            actor: by,
            data: { outcome: input.outcome, result },
          },
        ],
      });
      return continueSession(execution.session, 'reconciled');
    },
  };
  /** Separation of duties (decision-rights.ts), with this request's parties as stored. */
  async function assertMayAct(
    rt: AgentRuntime,
    request: ApprovalRequest,
    input: { by?: string; roles?: readonly string[] },
    action: 'decide' | 'reconcile',
  ): Promise<SessionRecord | null> {
    const session = await rt.store.getSession(request.session);
    assertMayDecide(
      {
        raisedBy: request.raisedBy,
        customer: session?.principal ?? null,
        requiredRole: rt.toolsByName.get(request.tool)?.role ?? null,
        escalatedTo: escalationInForce(request, rt.toolsByName.get(request.tool)?.nudges, rt.now()),
        selfApproval: options.selfApproval ?? false,
      },
      { name: input.by?.trim() || 'unknown', roles: input.roles ?? null },
      action,
    );
    return session;
  }

  // Every decision of a tool call (HTTP, CLI, approve/reject) passes here, inside its span.
  const decideUntraced = agent.decide;
  agent.decide = (requestId, input, read) =>
    withSpan(
      SPAN.requestDecide,
      {
        [ATTR.requestId]: requestId,
        [ATTR.requestKind]: 'tool-call',
        [ATTR.agent]: options.name,
        [ATTR.verdict]: input.approved ? 'approved' : 'rejected',
      },
      () => decideUntraced(requestId, input, read),
    );
  return agent;
}

/** Rows a decision already read or wrote, handed to the run it continues so it reads neither again. */
interface KnownRows {
  session: SessionRecord;
  /** The request just decided, as the compare-and-set wrote it: a decided request never changes. */
  decided: ApprovalRequest;
}

/**
 * The session as read before a decision that won and took the lease in the same
 * transaction is still the session now: while a request of its open batch is pending, no
 * run commits to it (a run settles nothing until every request is decided, and a new
 * message decides them all first, which this decision would have lost to). So it is passed
 * on instead of read again. A session whose open batch does not hold the request, which
 * that rule says cannot happen, is read again rather than trusted.
 */
function knownAfterDecision(session: SessionRecord, decided: ApprovalRequest): KnownRows | undefined {
  const held = session.batch?.calls.some(
    (call) => call.disposition.kind === 'approval' && call.disposition.approvalId === decided.id,
  );
  return held ? { session, decided } : undefined;
}

const decisionFields = new Set(['approved', 'reason', 'by', 'remember', 'roles']);

/**
 * A decision carries no call. Anything else sent with it (arguments, another tool) is
 * ignored — the stored call is what runs — and the attempt is written to the audit trail.
 */
async function auditIgnoredFields(
  rt: AgentRuntime,
  request: ApprovalRequest,
  input: DecideInput,
): Promise<void> {
  const extra = Object.keys(input).filter((key) => !decisionFields.has(key));
  if (extra.length === 0) return;
  const sent = input as unknown as Record<string, unknown>;
  await rt.store.appendAudit(
    [
      {
        kind: 'tamper.ignored',
        session: request.session,
        requestId: request.id,
        actor: input.by?.trim() || 'unknown',
        data: {
          fields: extra,
          sent: canonicalJson(Object.fromEntries(extra.map((key) => [key, sent[key] ?? null]))),
          storedArgsHash: request.argsHash,
        },
      },
    ],
    rt.now().toISOString(),
  );
}

/** The rule an "always" decision creates, refused where the tool wants every call seen. */
function standingRule(
  rt: AgentRuntime,
  request: ApprovalRequest,
  remember: 'tool' | 'tool-with-args',
  decision: Decision,
): StandingRule {
  if (decision.verdict !== 'approved') {
    throw new InvalidInputError('Only an approval can be remembered.', { hint: 'Reject without --always.' });
  }
  const tool = rt.toolsByName.get(request.tool);
  if (!tool)
    throw new InvalidInputError(`Tool ${request.tool} is not registered with agent ${rt.agentName}.`);
  if (!tool.standing) {
    throw new ForbiddenError(`${tool.name} does not allow standing approval: a person sees every call.`, {
      hint: 'Approve this request without --always / remember.',
    });
  }
  return {
    id: newId('rule'),
    session: request.session,
    tool: tool.name,
    toolIdentity: tool.identity,
    argsHash: remember === 'tool-with-args' ? request.argsHash : null,
    sourceRequest: request.id,
    createdAt: decision.at,
    createdBy: decision.by,
    revokedAt: null,
    revokedBy: null,
  };
}

function expiredError(requestId: string, expiresAt: string): ExpiredError {
  return new ExpiredError(`Request ${requestId} expired at ${expiresAt} and can no longer be decided.`, {
    hint: "The agent is told on the session's next run; ask the customer to request it again if it is still wanted.",
  });
}

/** Tools see the AppState port, the same one workflow executors use (through CheckpointStore). */
function stateOf(store: AppState, namespace: string): ToolState {
  return {
    get: async <T extends JsonValue = JsonValue>(key: string) =>
      (await store.getState(namespace, key)) as T | undefined,
    set: (key, value) => store.setState(namespace, key, value),
  };
}
