import {
  type ApprovalRequest,
  type ApprovalRequirement,
  type Decision,
  EXPIRED_REASON,
  MOVED_ON_REASON,
} from '../core/approval.ts';
import type { AuditEvent } from '../core/audit.ts';
import { bindArgs, canonicalJson } from '../core/canonical-json.ts';
import { IntegrityViolationError } from '../core/errors/integrity-violation-error.ts';
import { ModelCallError } from '../core/errors/model-call-error.ts';
import { OutcomeUnknownError } from '../core/errors/outcome-unknown-error.ts';
import { StepLimitError } from '../core/errors/step-limit-error.ts';
import type { ExecutionRecord } from '../core/execution.ts';
import { newId } from '../core/ids.ts';
import { expiryAfter } from '../core/instant.ts';
import type { JsonValue } from '../core/json.ts';
import type { Message, ToolCall, ToolResult } from '../core/messages.ts';
import { planNudges, withDefaultWarning } from '../core/nudges.ts';
import type { BatchCall, KeptCall, OpenBatch, SessionRecord } from '../core/session.ts';
import { signal, signalDecision } from '../core/signals.ts';
import { ATTR, SPAN, setSpanAttributes, withSpan } from '../core/tracing.ts';
import { emit } from '../events/emit.ts';
import { callModel, type ModelResponse } from '../model/call-model.ts';
import { fromModelResult } from '../model/from-model-result.ts';
import type { ModelPrompt } from '../model/language-model.ts';
import { toModelMessage, toModelPrompt } from '../model/to-model-prompt.ts';
import type { StandingRule, StepCommit, Store } from '../store/store.ts';
import type { Tool, ToolContext } from '../tools/define-tool.ts';
import { validateArgs } from '../tools/validate-args.ts';
import { approvalPlan, type CallFacts, classifyCalls } from './classify-calls.ts';
import { faultPoint } from './fault-point.ts';
import {
  type KeptOutcome,
  keepsWaiting,
  keptNotice,
  NOTICE_POSTER,
  stillWaitingResult,
} from './keep-waiting.ts';
import { mustHoldLease } from './lease.ts';
import {
  type AutoApproval,
  autoRuleApproval,
  matchStandingRule,
  nextAutoApprovedSteps,
  rulesMayApprove,
  standingRuleApproval,
} from './match-rule.ts';
import { planSettlement } from './plan-settlement.ts';
import { approvedByRule, raisedEvent, toolCallRequest } from './raise-request.ts';
import {
  type ApprovedCallDeps,
  announceFinished,
  type DeferredFinish,
  runApprovedCall,
} from './run-approved-call.ts';
import { runDirectCall } from './run-direct-call.ts';
import type { AgentRuntime } from './runtime.ts';
import { type ExecutionView, type TurnResult, toApprovalView, toExecutionView } from './views.ts';

/**
 * One run of one session, under its lease: it loads the history once, then appends — the
 * prompt is extended per message, never rebuilt, so a step costs the same at step 1000 as
 * at step 1. Every step commits before the next model call.
 */
export class SessionRun {
  private readonly runtime: AgentRuntime;
  private readonly store: Store;
  private readonly owner: string;
  private session: SessionRecord;
  private readonly prompt: ModelPrompt;
  private lastReply: string | null = null;
  /** The last answer already in the history: the reply of a run that had nothing to do. */
  private readonly historyReply: string | null;
  private modelCalled = false;
  /** Model steps in a row whose every approval was given by a rule; capped per run. */
  private autoApprovedSteps = 0;
  /** Audit entries of logged tool runs, written with the next step's commit. */
  private pendingAudit: AuditEvent[] = [];
  /** A new message arrived: calls still queued behind a request are answered "moved on". */
  private movedOn = false;
  /**
   * Pending requests the new message keeps waiting (onNewMessage 'keep'), by id; and the
   * calls carried from batch to batch while theirs wait (OpenBatch.kept).
   */
  private keep = new Set<string>();
  private kept: KeptCall[];
  /** Ledger results written with the next step's commit (see runApprovedCall's deferFinish). */
  private pendingFinishes: DeferredFinish[] = [];
  /** The last step released the lease with its commit; nothing more may be written. */
  leaseReleased = false;
  /** Who posted the message the model is answering: the raiser of the requests it proposes. */
  private raiser: string | null;
  /**
   * The request whose decision started this run, as its compare-and-set wrote it (the run
   * holds the lease it took): final, so not read again. Its ledger row is still looked up.
   */
  private readonly decided: ApprovalRequest | undefined;
  /**
   * The decided request's ledger row as the decision read it under the lease (null: none yet);
   * undefined when not read, then it is read when needed.
   */
  private readonly decidedExecution: ExecutionRecord | null | undefined;

  constructor(
    runtime: AgentRuntime,
    owner: string,
    session: SessionRecord,
    messages: Message[],
    decided?: ApprovalRequest,
    decidedExecution?: ExecutionRecord | null,
  ) {
    this.runtime = runtime;
    this.decided = decided;
    this.decidedExecution = decidedExecution;
    this.store = runtime.store;
    this.owner = owner;
    this.session = session;
    this.prompt = toModelPrompt(runtime.instructions, messages);
    const last = messages.at(-1);
    this.historyReply = last?.role === 'assistant' && !last.calls?.length ? last.text : null;
    this.raiser = lastPoster(messages);
    this.kept = [...(session.batch?.kept ?? [])];
  }

  /** Continue the session: settle what waits, add the new message, run the model to a stop. */
  async run(userText: string | undefined, by?: string): Promise<TurnResult> {
    const loaded = await this.expireOverdue();
    if (userText !== undefined && this.session.batch) await this.moveOn();

    const append: Message[] = [];
    if (this.session.batch) {
      // Moving on decides them all, so what expireOverdue read is only reused without it.
      const settled = await this.settleBatch(this.session.batch, userText === undefined ? loaded : undefined);
      if (settled.kind === 'awaiting_reconciliation' && userText !== undefined) {
        throw new OutcomeUnknownError(
          `Session ${this.session.id} cannot take a new message yet: an approved call may or may not have run.`,
          {
            hint: 'A person must settle it first: `countersign executions --status unknown`, then `countersign reconcile REQUEST --succeeded|--failed`. The message was not stored.',
          },
        );
      }
      if (settled.kind !== 'results') return this.result();
      if (settled.results.length > 0) append.push({ role: 'tool', results: settled.results });
      const notice = await this.deliverKept();
      if (notice) append.push(notice);
    }
    if (userText !== undefined) {
      append.push(by === undefined ? { role: 'user', text: userText } : { role: 'user', text: userText, by });
      this.raiser = by ?? null;
    }
    if (append.length > 0) {
      await this.commit({ append, batch: this.session.batch ? this.carried() : undefined });
      faultPoint('after-results-commit');
    }
    if (this.needsModel()) await this.modelLoop();
    return this.result();
  }

  private needsModel(): boolean {
    const last = this.prompt.at(-1);
    return last !== undefined && last.role !== 'assistant' && last.role !== 'system';
  }

  private async modelLoop(): Promise<void> {
    const { maxSteps } = this.runtime;
    for (let step = 1; step <= maxSteps; step++) {
      const { text, calls, unparseable } = await this.callModel();
      this.modelCalled = true;
      if (text) this.lastReply = text;
      const assistant: Message = calls.length
        ? { role: 'assistant', text, calls }
        : { role: 'assistant', text };
      if (calls.length === 0) {
        await this.commit({ append: [assistant], releaseLease: true });
        return;
      }
      const messageSeq = this.session.messageCount;
      const { batch, approvals, audit, waiting } = await this.classify(messageSeq, calls, unparseable);
      if (approvals.length === 0 && !waiting) {
        const settled = await this.settleBatch(batch);
        if (settled.kind !== 'results')
          throw new Error('unreachable: a batch without approvals settles at once');
        await this.commit({ append: [assistant, { role: 'tool', results: settled.results }] });
        continue;
      }
      // Requests are stored before anything runs, so a crash can never mint a second request
      // (and a second execution) for a call a rule already approved.
      await this.commit({
        append: [assistant],
        batch: this.withKept(batch),
        approvals,
        audit,
        ...(waiting ? { releaseLease: true } : {}),
      });
      if (waiting) return;
      // Every request of the batch was just raised and approved by a rule: nothing to read.
      const settled = await this.settleBatch(
        batch,
        new Map(approvals.map((request) => [request.id, request])),
      );
      if (settled.kind !== 'results') return;
      await this.commit({ append: [{ role: 'tool', results: settled.results }], batch: this.carried() });
    }
    throw new StepLimitError(`The agent took ${maxSteps} model steps in one turn without finishing.`, {
      hint: 'Everything done so far is saved. Send a new message to continue, or raise maxSteps.',
    });
  }

  /** One model step, in a span that records a failure as MODEL_ERROR (its stable code). */
  private callModel(): Promise<{ text: string; calls: ToolCall[]; unparseable: Set<string> }> {
    const attributes = { [ATTR.session]: this.session.id, [ATTR.agent]: this.runtime.agentName };
    return withSpan(SPAN.modelStep, attributes, async (span) => {
      const step = await this.callModelOnce();
      setSpanAttributes(span, { [ATTR.calls]: step.calls.length });
      return step;
    });
  }

  private async callModelOnce(): Promise<{ text: string; calls: ToolCall[]; unparseable: Set<string> }> {
    let result: ModelResponse;
    try {
      result = await callModel(
        this.runtime.model,
        { prompt: this.prompt, tools: this.runtime.modelTools },
        this.runtime.modelCall,
      );
    } catch (cause) {
      signal({ kind: 'model-error' });
      const detail = cause instanceof Error ? cause.message : String(cause);
      throw new ModelCallError(`The model call failed: ${detail}`, {
        hint: `Everything decided and executed so far is saved. Run \`countersign resume ${this.session.id}\` (or send the next message) to continue.`,
        cause,
      });
    }
    const parsed = fromModelResult(result);
    const calls: ToolCall[] = [...parsed.calls];
    // Unparseable arguments still become calls, so the model gets a readable error back.
    for (const bad of parsed.invalid) calls.push({ id: bad.id, tool: bad.tool, args: bad.raw });
    return { text: parsed.text, calls, unparseable: new Set(parsed.invalid.map((bad) => bad.id)) };
  }

  /**
   * Decide per call whether it runs, errs back to the model, or waits for a person: the
   * tools' checks gather the facts, classifyCalls decides, and this raises what it says.
   */
  private async classify(
    messageSeq: number,
    calls: ToolCall[],
    unparseable: Set<string>,
  ): Promise<{ batch: OpenBatch; approvals: ApprovalRequest[]; audit: AuditEvent[]; waiting: boolean }> {
    const rules = this.rulesOnce();
    const facts: CallFacts[] = [];
    const parsed: unknown[] = [];
    const requirements: Array<ApprovalRequirement | undefined> = [];
    for (const call of calls) {
      const gathered = await this.callFacts(call, unparseable.has(call.id), rules);
      facts.push(gathered.fact);
      parsed.push(gathered.parsed);
      requirements.push(gathered.requirement);
    }
    const step = classifyCalls(calls, facts, {
      knownTools: [...this.runtime.toolsByName.keys()],
      oneAtATime: this.runtime.oneAtATime,
    });
    this.autoApprovedSteps = nextAutoApprovedSteps(this.autoApprovedSteps, step);
    const batchCalls: BatchCall[] = [];
    const approvals: ApprovalRequest[] = [];
    const audit: AuditEvent[] = [];
    const now = this.runtime.now();
    for (const [index, call] of calls.entries()) {
      const plan = step.plans[index]!;
      const base = { callId: call.id, tool: call.tool, args: plan.args };
      if (plan.kind === 'error') {
        batchCalls.push({ ...base, disposition: { kind: 'error', output: plan.output } });
      } else if (plan.kind === 'run') {
        batchCalls.push({ ...base, disposition: { kind: 'run' } });
      } else if (plan.kind === 'queue') {
        batchCalls.push({ ...base, disposition: { kind: 'queued' } });
      } else {
        const tool = this.runtime.toolsByName.get(call.tool)!;
        const auto = plan.kind === 'auto-approve' ? plan.approval : null;
        const surfaced = await this.surface(
          tool,
          call.id,
          plan.args,
          parsed[index],
          now,
          auto,
          requirements[index],
        );
        approvals.push(surfaced.request);
        audit.push(...surfaced.audit);
        batchCalls.push({ ...base, disposition: { kind: 'approval', approvalId: surfaced.request.id } });
      }
    }
    return { batch: { messageSeq, calls: batchCalls }, approvals, audit, waiting: step.askedPerson };
  }

  /** Runs the tool's own checks on one call; `parsed` is the validated input, for its effect. */
  private async callFacts(
    call: ToolCall,
    unparseable: boolean,
    rules: () => Promise<StandingRule[]>,
  ): Promise<{ fact: CallFacts; parsed?: unknown; requirement?: ApprovalRequirement }> {
    const tool = this.runtime.toolsByName.get(call.tool);
    if (!tool) return { fact: { kind: 'unknown-tool' } };
    if (unparseable) return { fact: { kind: 'unparseable', toolName: tool.name } };
    const checked = await validateArgs(tool, call.args);
    if (!checked.ok) return { fact: { kind: 'invalid-args', error: checked.error } };
    const args = toJson(checked.args);
    const context = this.toolContext(call.id, null);
    const allowed = await tool.authorize(checked.args, context);
    if (allowed !== true) return { fact: { kind: 'not-allowed', args, reason: allowed } };
    const requirement = await tool.requirement(checked.args, context);
    if (requirement === null) return { fact: { kind: 'no-approval', args } };
    // A quorum is people's to fill: no standing or auto rule stands in for it.
    const auto = requirement.approvals > 1 ? null : await this.autoDecision(tool, args, rules);
    return { fact: { kind: 'needs-approval', args, auto }, parsed: checked.args, requirement };
  }

  /**
   * Raises the request for one call, approved on the spot when a rule covers it (`auto`,
   * named in the audit); otherwise it waits for a person.
   */
  private surface(
    tool: Tool,
    callId: string,
    args: JsonValue,
    parsedArgs: unknown,
    now: Date,
    auto: AutoApproval | null,
    requirement?: ApprovalRequirement,
  ): Promise<{ request: ApprovalRequest; audit: AuditEvent[] }> {
    const id = newId('apr');
    // The request is stored with the step's commit right after; the span covers raising it.
    const attributes = {
      [ATTR.requestId]: id,
      [ATTR.requestKind]: 'tool-call',
      [ATTR.session]: this.session.id,
      [ATTR.agent]: this.runtime.agentName,
      [ATTR.tool]: tool.name,
      [ATTR.run]: this.runtime.run,
      [ATTR.verdict]: auto ? 'approved' : 'pending',
    };
    return withSpan(SPAN.requestRaise, attributes, () =>
      this.surfaceOnce(id, tool, callId, args, parsedArgs, now, auto, requirement),
    );
  }

  private async surfaceOnce(
    id: string,
    tool: Tool,
    callId: string,
    args: JsonValue,
    parsedArgs: unknown,
    now: Date,
    auto: AutoApproval | null,
    known?: ApprovalRequirement,
  ): Promise<{ request: ApprovalRequest; audit: AuditEvent[] }> {
    const context = this.toolContext(callId, id);
    const requirement = known ??
      (await tool.requirement(parsedArgs, context)) ?? { role: tool.role ?? null, approvals: 1 };
    const createdAt = now.toISOString();
    const ttlMs = tool.ttlMs ?? this.runtime.approvalTtlMs;
    const expiresAt = expiryAfter(now, ttlMs);
    const raised = toolCallRequest({
      nudges: planNudges(withDefaultWarning(tool.nudges, this.runtime.warnBeforeMs), createdAt, expiresAt),
      id,
      session: this.session.id,
      agent: this.runtime.agentName,
      callId,
      tool: tool.name,
      args,
      effect: await tool.effect(parsedArgs, context),
      now,
      ttlMs,
      raisedBy: this.raiser,
      run: this.runtime.run,
      customer: this.session.principal,
      requiredRole: requirement.role,
      approvalsNeeded: requirement.approvals,
      editable: tool.editable,
    });
    const audit = [raisedEvent(raised, tool, this.runtime.agentName, auto ? 'approved' : 'pending')];
    if (!auto) return { request: raised, audit };
    const approved = approvedByRule(raised, auto);
    return { request: approved.request, audit: [...audit, approved.event] };
  }

  /**
   * Standing rules of this session first (matchStandingRule), then the agent's
   * auto-approval rules in order; the first match approves. Tool code runs for the latter,
   * so this is not pure; what it decides on is.
   */
  private async autoDecision(
    tool: Tool,
    args: JsonValue,
    rules: () => Promise<StandingRule[]>,
  ): Promise<AutoApproval | null> {
    if (!rulesMayApprove(tool, this.autoApprovedSteps, this.runtime.maxAutoApprovedSteps)) return null;
    const standing = matchStandingRule(await rules(), {
      toolIdentity: tool.identity,
      argsHash: bindArgs(args).argsHash,
    });
    if (standing) return standingRuleApproval(standing);
    const context = this.toolContext('auto', null);
    for (const rule of this.runtime.autoApprove) {
      if (await rule.approve({ tool: tool.name, args }, context)) return autoRuleApproval(rule.name);
    }
    return null;
  }

  /** The session's standing rules, read at most once per classification pass. */
  private rulesOnce(): () => Promise<StandingRule[]> {
    let read: Promise<StandingRule[]> | undefined;
    return () => {
      read ??= this.store.listRules({ session: this.session.id });
      return read;
    };
  }

  /**
   * Produces the tool results of a batch once every request in it is decided, or says why
   * it cannot yet: a request still waits, or an approved call's outcome is unknown.
   * planSettlement decides; this reads, checks the ledger, raises queued calls and runs.
   */
  private async settleBatch(
    initial: OpenBatch,
    /** Requests of this batch read or raised moments ago in this run, so they are not read twice. */
    loaded?: ReadonlyMap<string, ApprovalRequest>,
  ): Promise<
    { kind: 'results'; results: ToolResult[] } | { kind: 'awaiting_approval' | 'awaiting_reconciliation' }
  > {
    let batch = initial;
    const requests = new Map<string, ApprovalRequest>();
    for (const call of batch.calls) {
      if (call.disposition.kind !== 'approval') continue;
      const id = call.disposition.approvalId;
      const request = loaded?.get(id) ?? (await this.store.getApproval(id));
      if (request) requests.set(id, request);
    }
    let plan = planSettlement(batch, requests, { surfaceQueued: !this.movedOn, keep: this.keep });
    if (plan.kind === 'missing')
      throw new IntegrityViolationError(
        `Request ${plan.approvalId} of session ${this.session.id} is missing from the store.`,
      );
    if (plan.kind === 'waiting') return { kind: 'awaiting_approval' };
    // Before anything runs: an approved call whose earlier run may or may not have happened
    // stops the batch here, so no other call of it runs again while a person reconciles.
    if (await this.hasUnknownOutcome(requests)) return { kind: 'awaiting_reconciliation' };
    if (plan.kind === 'surface-queued') {
      batch = await this.surfaceQueued(batch, requests);
      plan = planSettlement(batch, requests, { surfaceQueued: false, keep: this.keep });
    }
    if (plan.kind !== 'settle') return { kind: 'awaiting_approval' };
    const results: ToolResult[] = [];
    let unknown = false;
    let integrity: IntegrityViolationError | null = null;
    for (const step of plan.steps) {
      if (step.kind === 'answer') {
        results.push(step.result);
      } else if (step.kind === 'keep') {
        results.push(stillWaitingResult(step.call, step.request));
        this.kept.push({
          callId: step.call.callId,
          tool: step.call.tool,
          args: step.call.args,
          approvalId: step.request.id,
        });
      } else if (step.kind === 'run-direct') {
        results.push(await this.runDirect(step.call));
      } else {
        const outcome = await runApprovedCall(
          this.approvedCallDeps(),
          step.call,
          step.request,
          step.deferFinish,
        );
        if (outcome.kind === 'unknown') unknown = true;
        else {
          if (outcome.kind === 'integrity') integrity = outcome.error;
          if (outcome.kind === 'result' && outcome.finish) this.pendingFinishes.push(outcome.finish);
          results.push(outcome.result);
        }
      }
    }
    if (unknown) {
      // No step follows to carry them: the results that are known are written now.
      await this.writeFinishes();
      return { kind: 'awaiting_reconciliation' };
    }
    if (integrity) {
      // Commit what we have so the session moves on, then surface the refusal.
      await this.commit({ append: [{ role: 'tool', results }], batch: this.carried() });
      throw integrity;
    }
    return { kind: 'results', results };
  }

  /** What stays open once a batch settles: the kept calls (calls empty), or nothing. */
  private carried(): OpenBatch | null {
    return this.kept.length > 0
      ? { messageSeq: this.session.messageCount, calls: [], kept: this.kept }
      : null;
  }

  /** A new batch, carrying the calls still kept waiting from earlier ones. */
  private withKept(batch: OpenBatch): OpenBatch {
    return this.kept.length > 0 ? { ...batch, kept: this.kept } : batch;
  }

  /**
   * Kept calls whose requests were decided since: approved ones run now (through the ledger,
   * exactly once, as any approved call), and the model is told every outcome in one notice.
   * Calls still waiting, or whose outcome is unknown, stay kept.
   */
  private async deliverKept(): Promise<Message | null> {
    if (this.kept.length === 0) return null;
    const outcomes: KeptOutcome[] = [];
    const still: KeptCall[] = [];
    for (const kept of this.kept) {
      const request =
        (kept.approvalId === this.decided?.id ? this.decided : null) ??
        (await this.store.getApproval(kept.approvalId));
      if (!request || request.status === 'pending') {
        if (request) still.push(kept);
        continue;
      }
      if (request.status !== 'approved') {
        outcomes.push({ call: kept, request });
        continue;
      }
      const call: BatchCall = {
        callId: kept.callId,
        tool: kept.tool,
        args: kept.args,
        disposition: { kind: 'approval', approvalId: kept.approvalId },
      };
      const outcome = await runApprovedCall(this.approvedCallDeps(), call, request);
      if (outcome.kind === 'unknown') {
        still.push(kept);
        continue;
      }
      outcomes.push({ call: kept, request, result: outcome.result });
    }
    this.kept = still;
    if (outcomes.length === 0) return null;
    return { role: 'user', text: keptNotice(outcomes), by: NOTICE_POSTER };
  }

  private async hasUnknownOutcome(requests: Map<string, ApprovalRequest>): Promise<boolean> {
    let unknown = false;
    for (const request of requests.values()) {
      if (request.status !== 'approved') continue;
      const record =
        request.id === this.decided?.id && this.decidedExecution !== undefined
          ? this.decidedExecution
          : await this.store.getExecution(request.id);
      if (record?.status === 'unknown') unknown = true;
      if (record?.status === 'started' && !this.runtime.toolsByName.get(request.tool)?.idempotent) {
        await mustHoldLease(this.store, this.session.id, this.owner);
        await this.store.finishExecution(request.id, {
          status: 'unknown',
          result: null,
          at: this.runtime.now().toISOString(),
        });
        unknown = true;
      }
    }
    return unknown;
  }

  /**
   * One request at a time: once the requests before them are decided, queued calls are
   * checked against the rules again (an "always" on the first may cover them) and the next
   * one that still needs a person is raised. Committed before anything runs.
   */
  private async surfaceQueued(batch: OpenBatch, requests: Map<string, ApprovalRequest>): Promise<OpenBatch> {
    const rules = this.rulesOnce();
    const now = this.runtime.now();
    const approvals: ApprovalRequest[] = [];
    const audit: AuditEvent[] = [];
    let raisedForPerson = false;
    const calls: BatchCall[] = [];
    for (const call of batch.calls) {
      const tool = this.runtime.toolsByName.get(call.tool);
      if (call.disposition.kind !== 'queued' || !tool) {
        calls.push(call);
        continue;
      }
      const auto = await this.autoDecision(tool, call.args, rules);
      const plan = approvalPlan(auto, { waiting: raisedForPerson, oneAtATime: true });
      if (plan === 'queue') {
        calls.push(call);
        continue;
      }
      const surfaced = await this.surface(tool, call.callId, call.args, call.args, now, auto);
      approvals.push(surfaced.request);
      audit.push(...surfaced.audit);
      requests.set(surfaced.request.id, surfaced.request);
      if (plan === 'ask') raisedForPerson = true;
      calls.push({ ...call, disposition: { kind: 'approval', approvalId: surfaced.request.id } });
    }
    const next = { ...batch, calls };
    await this.commit({ append: [], batch: next, approvals, audit });
    return next;
  }

  private async runDirect(call: BatchCall): Promise<ToolResult> {
    const tool = this.runtime.toolsByName.get(call.tool);
    const ran = await runDirectCall(call, tool, this.toolContext(call.callId, null), {
      session: this.session.id,
      actor: this.runtime.agentName,
    });
    this.pendingAudit.push(...ran.audit);
    return ran.result;
  }

  /**
   * Requests past their expiry are answered as expired before anything else happens.
   * Returns the batch's requests as read, less any it just expired (those changed).
   */
  private async expireOverdue(): Promise<Map<string, ApprovalRequest>> {
    const loaded = new Map<string, ApprovalRequest>();
    const batch = this.session.batch;
    if (!batch) return loaded;
    const now = this.runtime.now().toISOString();
    for (const approvalId of approvalIds(batch)) {
      const request =
        approvalId === this.decided?.id ? this.decided : await this.store.getApproval(approvalId);
      if (request && !(request.status === 'pending' && request.expiresAt <= now))
        loaded.set(request.id, request);
      if (request?.status === 'pending' && request.expiresAt <= now) {
        if (await expireRequest(this.store, request, now)) {
          this.announceDecision(request.id, {
            verdict: 'expired',
            by: 'countersign',
            reason: null,
            at: now,
            kind: 'expiry',
          });
        }
      }
    }
    return loaded;
  }

  /** A new message answers every waiting request with "moved on", in the same run. */
  private async moveOn(): Promise<void> {
    const batch = this.session.batch;
    if (!batch) return;
    this.movedOn = true;
    const at = this.runtime.now().toISOString();
    for (const call of batch.calls) {
      if (call.disposition.kind !== 'approval') continue;
      const id = call.disposition.approvalId;
      if (keepsWaiting(this.runtime.toolsByName.get(call.tool), this.runtime.onNewMessage)) {
        // Kept waiting: settling tells the model it still waits (if it still does by then).
        this.keep.add(id);
        continue;
      }
      const decision: Decision = {
        verdict: 'rejected',
        by: 'countersign',
        reason: MOVED_ON_REASON,
        at,
        kind: 'moved-on',
      };
      // Losing this compare-and-set is fine: a person decided first, and their decision stands.
      const outcome = await this.store.decide(id, decision, [
        {
          kind: 'request.moved-on',
          session: this.session.id,
          requestId: id,
          actor: 'countersign',
          data: { reason: MOVED_ON_REASON },
        },
      ]);
      if (outcome.won) this.announceDecision(id, decision);
    }
  }

  private announceDecision(requestId: string, decision: Decision): void {
    emit(this.runtime.events, {
      type: 'approval.decided',
      at: decision.at,
      requestId,
      session: this.session.id,
      verdict: decision.verdict,
      by: decision.by,
      kind: decision.kind,
    });
  }

  private async commit(
    step: Omit<StepCommit, 'session' | 'leaseOwner' | 'expectedMessageCount' | 'at' | 'finishes'>,
  ): Promise<void> {
    const audit = [...(step.audit ?? []), ...this.pendingAudit];
    const finishes = this.pendingFinishes;
    try {
      this.session = await this.store.commitStep({
        session: this.session.id,
        leaseOwner: this.owner,
        expectedMessageCount: this.session.messageCount,
        at: this.runtime.now().toISOString(),
        ...step,
        ...(audit.length > 0 ? { audit } : {}),
        ...(finishes.length > 0 ? { finishes } : {}),
      });
    } catch (error) {
      // The step is lost (a lease taken over, a store that is down), but a tool that ran must
      // not be left looking unknown if its result can still be written on its own.
      await this.writeFinishes().catch(() => undefined);
      throw error;
    }
    this.pendingFinishes = [];
    if (step.releaseLease) this.leaseReleased = true;
    for (const finish of finishes) announceFinished(this.runtime, this.session.id, finish);
    this.pendingAudit = [];
    const at = this.runtime.now().toISOString();
    for (const request of step.approvals ?? []) {
      if (request.status === 'pending') {
        emit(this.runtime.events, { type: 'approval.requested', at, approval: toApprovalView(request, at) });
      }
    }
    for (const message of step.append) this.prompt.push(toModelMessage(message));
  }

  private async writeFinishes(): Promise<void> {
    const finishes = this.pendingFinishes;
    this.pendingFinishes = [];
    for (const finish of finishes) {
      await this.store.finishExecution(finish.requestId, finish);
      announceFinished(this.runtime, this.session.id, finish);
    }
  }

  private approvedCallDeps(): ApprovedCallDeps {
    return {
      runtime: this.runtime,
      store: this.store,
      session: this.session.id,
      toolContext: (callId, requestId) => this.toolContext(callId, requestId),
      leaseOwner: this.owner,
      mustHoldLease: () => mustHoldLease(this.store, this.session.id, this.owner),
    };
  }

  private toolContext(callId: string, requestId: string | null): ToolContext {
    return {
      session: this.session.id,
      callId,
      agent: this.runtime.agentName,
      principal: this.session.principal,
      idempotencyKey: requestId ? `countersign:${requestId}` : `countersign:${this.session.id}:${callId}`,
      requestId,
      state: this.runtime.state,
    };
  }

  private async result(): Promise<TurnResult> {
    const now = this.runtime.now().toISOString();
    const approvals = [];
    const unknown: ExecutionView[] = [];
    for (const approvalId of this.session.batch ? approvalIds(this.session.batch) : []) {
      const request = await this.store.getApproval(approvalId);
      if (request?.status === 'pending') approvals.push(toApprovalView(request, now));
      const execution = await this.store.getExecution(approvalId);
      if (execution?.status === 'unknown') unknown.push(toExecutionView(execution));
    }
    const status = !this.session.batch
      ? 'completed'
      : unknown.length > 0
        ? 'awaiting_reconciliation'
        : 'awaiting_approval';
    // A reply belongs to this run: words from an earlier turn are never repeated as new.
    const reply = this.lastReply ?? (!this.modelCalled && status === 'completed' ? this.historyReply : null);
    return { session: this.session.id, status, reply, approvals, unknown };
  }
}

export async function expireRequest(store: Store, request: ApprovalRequest, at: string): Promise<boolean> {
  const decision: Decision = {
    verdict: 'expired',
    by: 'countersign',
    reason: EXPIRED_REASON,
    at,
    kind: 'expiry',
  };
  const outcome = await store.decide(request.id, decision, [
    {
      kind: 'request.expired',
      session: request.session,
      requestId: request.id,
      actor: 'countersign',
      data: { expiresAt: request.expiresAt },
    },
  ]);
  if (outcome.won) signalDecision(request, decision);
  return outcome.won;
}

/** Who posted the latest user message, if it says; requests raised answering it are theirs. */
function lastPoster(messages: readonly Message[]): string | null {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index]!;
    // countersign's own notices (kept calls' outcomes) raise nothing: the customer's message before does.
    if (message.role === 'user' && message.by !== NOTICE_POSTER) return message.by ?? null;
  }
  return null;
}

/** The requests an open batch waits on: its calls' and the kept ones'. */
function approvalIds(batch: OpenBatch): string[] {
  const ids: string[] = [];
  for (const call of batch.calls)
    if (call.disposition.kind === 'approval') ids.push(call.disposition.approvalId);
  for (const kept of batch.kept ?? []) ids.push(kept.approvalId);
  return ids;
}

/** Zod output is plain data for JSON-schema'd inputs; this drops undefined and checks that. */
function toJson(value: unknown): JsonValue {
  return JSON.parse(canonicalJson(value)) as JsonValue;
}
