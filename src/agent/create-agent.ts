import type { Approval, ApprovalRequest, Decision, RequestEdit } from '../core/approval.ts';
import { DEFAULT_REJECTION_REASON } from '../core/approval.ts';
import type { EditedCall } from '../core/audit.ts';
import { canonicalJson } from '../core/canonical-json.ts';
import { bindingError, bindingProblem, toolCallBinding } from '../core/check-binding.ts';
import { claimOverridden } from '../core/claims.ts';
import { assertMayDecide, type Decider, type RequestParties } from '../core/decision-rights.ts';
import { parseTtl } from '../core/duration.ts';
import { AlreadyDecidedError } from '../core/errors/already-decided-error.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { ExpiredError } from '../core/errors/expired-error.ts';
import { ForbiddenError } from '../core/errors/forbidden-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import { newId, userIdPattern } from '../core/ids.ts';
import type { JsonValue } from '../core/json.ts';
import { defaultWarningMs, escalationInForce } from '../core/nudges.ts';
import { type ApprovalStep, approvalStep, holdsRole } from '../core/quorum.ts';
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
import type { ApprovalUpdateResult, RunStart, StandingRule, Store } from '../store/store.ts';
import type { OnNewMessage, Tool, ToolContext, ToolState } from '../tools/define-tool.ts';
import { type AgentTools, normalizeTools } from '../tools/normalize-tools.ts';
import type { AutoApprovalRule } from './auto-approval-rule.ts';
import { editCall } from './edit-request.ts';
import { faultPoint } from './fault-point.ts';
import { acquireSessionLease, keepLease, leaseNow, newLeaseOwner } from './lease.ts';
import type { AgentRuntime } from './runtime.ts';
import { expireRequest, SessionRun } from './session-run.ts';
import { type TurnResult, toApprovalView } from './views.ts';

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
   * term; one that died lets go within a term, or at once when its death is known (on the
   * same host by its pid; on PostgreSQL from any host, by its liveness lock).
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
  /**
   * What a new customer message does to requests still waiting (a tool's own `onNewMessage`
   * overrides it): 'reject' answers them "moved on" (the default; right when the customer is
   * the approver), 'keep' lets them wait for the approver and tells the model they still
   * wait, then, once decided, what came of them (a support desk).
   */
  onNewMessage?: OnNewMessage;
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
  /**
   * Approve with changes: the argument fields to change and their new values (only the
   * tool's `editable` fields). The edited call is validated, hashed, authorized and routed
   * by the policy again; when it needs another role or more approvers, the request keeps
   * waiting for them instead of running.
   */
  edit?: Record<string, JsonValue>;
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
  /**
   * `read`: the request (and its session) as the caller just read them, so they are not read
   * again; a session that is not the request's is ignored.
   */
  decide(
    requestId: string,
    input: DecideInput,
    read?: { request?: ApprovalRequest; session?: SessionRecord },
  ): Promise<TurnResult>;
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
  // The agent's own ttl is part of its definition, so it is judged here, naming the option.
  // COUNTERSIGN_APPROVAL_TTL is the deployment's and is read when the agent first runs
  // (docs/configuration.md), by the same rule.
  const ownApprovalTtlMs =
    options.approvalTtl === undefined
      ? undefined
      : parseTtl(
          options.approvalTtl,
          `approvalTtl of agent ${options.name}`,
          (options.now ?? (() => new Date()))(),
        );
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
      approvalTtlMs:
        ownApprovalTtlMs ??
        parseTtl(
          process.env.COUNTERSIGN_APPROVAL_TTL ?? '24h',
          'COUNTERSIGN_APPROVAL_TTL',
          (options.now ?? (() => new Date()))(),
        ),
      warnBeforeMs: defaultWarningMs(options.warnBefore),
      leaseMs: options.leaseMs ?? 20_000,
      busyWaitMs: options.busyWaitMs ?? 15_000,
      now: options.now ?? (() => new Date()),
      events: options.events,
      onNewMessage: options.onNewMessage ?? 'reject',
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
    const owner = leasedAs ?? (await newLeaseOwner(rt.store));
    if (leasedAs === undefined)
      await acquireSessionLease(rt.store, sessionId, owner, { leaseMs: rt.leaseMs, waitMs: rt.busyWaitMs });
    const stopRenewing = keepLease(rt.store, sessionId, owner, rt.leaseMs);
    let run: SessionRun | undefined;
    try {
      const session = known?.session ?? (await rt.store.getSession(sessionId));
      if (!session) throw new NotFoundError(`Session ${sessionId} does not exist.`);
      const stored = known?.run?.messages ?? (await rt.store.loadMessages(sessionId));
      const messages = stored.map((entry) => entry.message);
      const runtime = hooks ? { ...rt, modelCall: { ...rt.modelCall, hooks } } : rt;
      run = new SessionRun(runtime, owner, session, messages, known?.decided, known?.run?.execution);
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

    decide: (requestId, input, read = {}) => decideOnce(requestId, input, read, 1),

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

  /**
   * One attempt at a person's decision. `attempt` counts the times a partial approval lost
   * its compare-and-set to another approver's and was judged again on the row as it then was.
   */
  async function decideOnce(
    requestId: string,
    input: DecideInput,
    read: { request?: ApprovalRequest; session?: SessionRecord },
    attempt: number,
  ): Promise<TurnResult> {
    const rt = getRuntime();
    if (read.request?.id !== requestId && rt.store.getApprovalWithSession !== undefined) {
      // The row and its session in one read (separation of duties needs the session).
      const found = await rt.store.getApprovalWithSession(requestId);
      if (found)
        return decideOnce(
          requestId,
          input,
          { request: found.request, ...(found.session ? { session: found.session } : {}) },
          attempt,
        );
    }
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
    const known = read.session?.id === request.session && read.request === request ? read.session : undefined;
    const session = await assertMayAct(rt, request, input, 'decide', known);
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
    // Who must decide is judged again by the tool's policy on the bound call, so a row edited
    // to a lower role or fewer approvers (or more editable fields) decides nothing more.
    const routed = request.status === 'pending' ? await routedNow(rt, request, session) : request;
    if (routed !== request) assertMayDecide(partiesOf(rt, routed, session), deciderOf(input), 'decide');
    const by = input.by?.trim() || 'unknown';
    const reason = input.reason?.trim() || (input.approved ? null : DEFAULT_REJECTION_REASON);
    let quorum: { approvals: Approval[]; edit: RequestEdit | null; approvalsNeeded: number } | null = null;
    if (input.approved) {
      const step = await approvalStepFor(rt, routed, input, session, { by, at, reason });
      if (step.kind === 'record') {
        const recorded = await recordPartialApproval(rt, routed, step, { by, at, reason });
        if (recorded.won) return awaitingTurn(rt, recorded.request);
        // Another approver got there first: judge this approval again against the row as it is.
        if (recorded.request?.status === 'pending' && attempt < 3)
          return decideOnce(requestId, input, { request: recorded.request }, attempt + 1);
        throw lostDecision(requestId, recorded.request ?? request, at);
      }
      quorum = step;
    } else if (input.edit !== undefined) {
      throw new InvalidInputError(`An edit comes with an approval; request ${requestId} was not decided.`, {
        hint: 'Send {"approved": true, "edit": {…}}, or reject without an edit.',
      });
    }
    const decision: Decision = {
      verdict: input.approved ? 'approved' : 'rejected',
      by,
      reason,
      at,
      kind: 'person',
      ...(quorum?.edit ? { edit: quorum.edit } : {}),
      ...(quorum && quorum.approvalsNeeded > 1 ? { approvals: quorum.approvals } : {}),
      // A veto of a quorum keeps the approvals it overrode.
      ...(!input.approved && request.approvals.length > 0 ? { approvals: request.approvals } : {}),
    };
    if (input.remember && (decision.edit || request.approvalsNeeded > 1)) {
      throw new InvalidInputError(
        `Request ${requestId}: "always" cannot be given with ${decision.edit ? 'an edit' : 'a quorum'}; nothing was decided.`,
        { hint: 'Approve without --always / remember.' },
      );
    }
    const rule = input.remember ? standingRule(rt, request, input.remember, decision) : undefined;
    // Continuing inline: the session's lease is taken in the decision's own transaction.
    const owner = options.continuations ? undefined : await newLeaseOwner(rt.store);
    // On the store's clock, as acquireSessionLease's leases are (leaseNow).
    const nowMs = owner === undefined ? 0 : await leaseNow(rt.store);
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
            ...(decision.edit ? { edited: editedEntry(decision.edit) } : {}),
            ...(decision.approvals ? { approvals: decision.approvals } : {}),
            ...claimOverridden(request, decision.by, at),
          },
        },
      ],
      { ...(rule ? { rule } : {}), ...(lease ? { lease, loadRun: session !== null } : {}) },
    );
    if (!outcome.won) throw lostDecision(requestId, outcome.request ?? request, at);
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
      session ? knownAfterDecision(session, outcome.request, outcome.run) : undefined,
    );
  }
  /**
   * What this approval does (quorum.ts): with an edit, the edited call is checked and routed
   * by the policy again first (edit-request.ts), so an edit that raises an amount can need
   * another role or more approvers before anything runs.
   */
  async function approvalStepFor(
    rt: AgentRuntime,
    request: ApprovalRequest,
    input: DecideInput,
    session: SessionRecord | null,
    approval: Approval,
  ): Promise<ApprovalStep> {
    if (input.edit === undefined) return approvalStep(request, approval);
    const tool = rt.toolsByName.get(request.tool);
    if (!tool)
      throw new InvalidInputError(`Tool ${request.tool} is not registered with agent ${rt.agentName}.`);
    const edited = await editCall(tool, request, input.edit, decisionContext(rt, request, session), {
      by: approval.by,
      at: approval.at,
    });
    if (edited === null) return approvalStep(request, approval);
    return approvalStep(request, approval, {
      ...edited,
      editorQualifies: holdsRole(input.roles ?? null, edited.requirement.role),
    });
  }

  /** The tool context a decision runs tool code in (the policy, an edit's checks). */
  function decisionContext(
    rt: AgentRuntime,
    request: ApprovalRequest,
    session: SessionRecord | null,
  ): ToolContext {
    return {
      session: request.session,
      callId: request.callId,
      agent: rt.agentName,
      principal: session?.principal ?? request.customer,
      idempotencyKey: `countersign:${request.id}`,
      requestId: request.id,
      state: rt.state,
    };
  }

  /**
   * The request with its routing as the tool's code gives it now, for the call that would
   * run (the pending edit, else the proposal; both already checked against their hashes):
   * the stricter of the row's and the policy's role and quorum, and the tool's editable
   * fields. The row itself is returned when nothing differs.
   */
  async function routedNow(
    rt: AgentRuntime,
    request: ApprovalRequest,
    session: SessionRecord | null,
  ): Promise<ApprovalRequest> {
    const tool = rt.toolsByName.get(request.tool);
    if (!tool) return request;
    const requirement = await tool.requirement(
      request.edit?.args ?? request.args,
      decisionContext(rt, request, session),
    );
    const requiredRole = requirement?.role ?? request.requiredRole;
    const approvalsNeeded = Math.max(request.approvalsNeeded, requirement?.approvals ?? 1);
    const editable = [...tool.editable];
    if (
      requiredRole === request.requiredRole &&
      approvalsNeeded === request.approvalsNeeded &&
      editable.join('\n') === request.editable.join('\n')
    )
      return request;
    return { ...request, requiredRole, approvalsNeeded, editable };
  }

  /** A partial approval (or a re-routing edit): recordApproval's compare-and-set, audited with it. */
  async function recordPartialApproval(
    rt: AgentRuntime,
    request: ApprovalRequest,
    step: Extract<ApprovalStep, { kind: 'record' }>,
    approval: Approval,
  ): Promise<ApprovalUpdateResult> {
    const outcome = await rt.store.recordApproval(
      request.id,
      {
        revision: request.revision,
        at: approval.at,
        approvals: step.approvals,
        edit: step.edit,
        requiredRole: step.requiredRole,
        approvalsNeeded: step.approvalsNeeded,
      },
      [
        {
          kind: 'request.approval-added',
          session: request.session,
          requestId: request.id,
          actor: approval.by,
          data: {
            tool: request.tool,
            args: request.argsJson,
            argsHash: request.argsHash,
            reason: approval.reason,
            approvals: step.approvals.length,
            approvalsNeeded: step.approvalsNeeded,
            requiredRole: step.requiredRole,
            rerouted: step.rerouted,
            ...(step.edit ? { edited: editedEntry(step.edit) } : {}),
          },
        },
      ],
    );
    if (outcome.won) {
      emit(rt.events, {
        type: 'approval.progressed',
        at: approval.at,
        requestId: request.id,
        session: request.session,
        by: approval.by,
        approvals: step.approvals.length,
        approvalsNeeded: step.approvalsNeeded,
        requiredRole: step.requiredRole,
        edited: step.edit !== null,
      });
    }
    return outcome;
  }

  /** Separation of duties (decision-rights.ts), with this request's parties as stored. */
  async function assertMayAct(
    rt: AgentRuntime,
    request: ApprovalRequest,
    input: { by?: string; roles?: readonly string[] },
    action: 'decide' | 'reconcile',
    known?: SessionRecord,
  ): Promise<SessionRecord | null> {
    const session = known ?? (await rt.store.getSession(request.session));
    assertMayDecide(partiesOf(rt, request, session), deciderOf(input), action);
    return session;
  }

  function partiesOf(
    rt: AgentRuntime,
    request: ApprovalRequest,
    session: SessionRecord | null,
  ): RequestParties {
    return {
      raisedBy: request.raisedBy,
      customer: session?.principal ?? null,
      // The row's role (the policy may route by amount; decide judges it again with the
      // policy, routedNow), else the tool's role as configured now (rows from before roles
      // were recorded, or a row whose role was edited away).
      requiredRole: request.requiredRole ?? rt.toolsByName.get(request.tool)?.role ?? null,
      escalatedTo: escalationInForce(request, rt.toolsByName.get(request.tool)?.nudges, rt.now()),
      selfApproval: options.selfApproval ?? false,
      approvedBy: request.approvals.map((approval) => approval.by),
    };
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
  /** The history and the decided request's ledger row, read by the decision under the lease. */
  run?: RunStart;
}

/**
 * The session as read before a decision that won and took the lease in the same
 * transaction is still the session now: while a request of its open batch is pending, no
 * run commits to it (a run settles nothing until every request is decided, and a new
 * message decides them all first, which this decision would have lost to). So it is passed
 * on instead of read again. A session whose open batch does not hold the request, which
 * that rule says cannot happen, is read again rather than trusted.
 */
function knownAfterDecision(
  session: SessionRecord,
  decided: ApprovalRequest,
  run: RunStart | undefined,
): KnownRows | undefined {
  const held = session.batch?.calls.some(
    (call) => call.disposition.kind === 'approval' && call.disposition.approvalId === decided.id,
  );
  // The history must be the one the session's count says (it is, under the lease; checked anyway).
  const current = run !== undefined && run.messages.length === session.messageCount ? run : undefined;
  return held ? { session, decided, ...(current ? { run: current } : {}) } : undefined;
}

const decisionFields = new Set(['approved', 'reason', 'by', 'remember', 'roles', 'edit']);

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

function deciderOf(input: { by?: string; roles?: readonly string[] }): Decider {
  return { name: input.by?.trim() || 'unknown', roles: input.roles ?? null };
}

/** Why a decision lost its compare-and-set: expired, or decided by someone else first. */
function lostDecision(requestId: string, current: ApprovalRequest, at: string): Error {
  if (current.status === 'expired' || (current.status === 'pending' && current.expiresAt <= at)) {
    return expiredError(requestId, current.expiresAt);
  }
  if (current.decision) return new AlreadyDecidedError(requestId, current.decision);
  return new AlreadyDecidedError(requestId, {
    verdict: current.status === 'pending' ? 'rejected' : current.status,
    by: 'unknown',
    reason: null,
    at,
    kind: 'person',
  });
}

/** An edited call as its audit entries record it: canonical JSON, hash, preview and diff. */
function editedEntry(edit: RequestEdit): EditedCall {
  return { args: edit.argsJson, argsHash: edit.argsHash, effect: edit.effect, diff: edit.diff };
}

/** A decision that was recorded but did not decide: the request still waits (for more approvers). */
function awaitingTurn(rt: AgentRuntime, request: ApprovalRequest): TurnResult {
  return {
    session: request.session,
    status: 'awaiting_approval',
    reply: null,
    approvals: [toApprovalView(request, rt.now().toISOString())],
    unknown: [],
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
