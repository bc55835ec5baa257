import type { Agent } from '../agent/create-agent.ts';
import type { TurnResult } from '../agent/views.ts';
import { type ApprovalRequest, type Decision, EXPIRED_REASON } from '../core/approval.ts';
import type { AuditEvent } from '../core/audit.ts';
import { bindArgs, canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import { bindingError, bindingProblem, requestBinding } from '../core/check-binding.ts';
import { claimOverridden } from '../core/claims.ts';
import { assertMayDecide, type Decider } from '../core/decision-rights.ts';
import { parseTtl } from '../core/duration.ts';
import { AlreadyDecidedError } from '../core/errors/already-decided-error.ts';
import { ExpiredError } from '../core/errors/expired-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import { RequestAnsweredError } from '../core/errors/request-answered-error.ts';
import { SessionBusyError } from '../core/errors/session-busy-error.ts';
import { newId } from '../core/ids.ts';
import type { JsonValue } from '../core/json.ts';
import { defaultWarningMs, escalationInForce, planNudges, withDefaultWarning } from '../core/nudges.ts';
import { NEVER_EXPIRES, runSessionOf } from '../core/port-effect.ts';
import { waitingFields } from '../core/request-defaults.ts';
import { signalDecision } from '../core/signals.ts';
import { assertStoreId } from '../store/checkpoint-rules.ts';
import type {
  CheckpointStore,
  CheckpointSummary,
  RunPage,
  RunPageQuery,
  RunSummary,
  SaveCheckpointResult,
  StoredCheckpoint,
} from '../store/checkpoint-store.ts';
import type { RequestBook } from '../store/ports/request-book.ts';
import type { Store } from '../store/store.ts';
import { approvalAnswerSchema, isAgentExecutor } from './agent-executor.ts';
import { restoreRunState } from './compatibility.ts';
import type { Workflow } from './define-workflow.ts';
import type { WorkflowState } from './executor-context.ts';
import { portExpiryEvent } from './port-expiry-event.ts';
import { portRole } from './port-role.ts';
import type { RequestPort } from './request-port.ts';
import {
  CHECKPOINT_FORMAT,
  type CheckpointBody,
  decodeCheckpointBody,
  emptyRunState,
  type PendingRequest,
  statusOf,
  type WorkflowRunState,
} from './run-state.ts';
import { type RunView, toRunView } from './run-view.ts';
import { describeIssue } from './schema-hash.ts';
import { route, runSuperstep } from './superstep.ts';

export interface WorkflowRunnerOptions {
  workflows: readonly Workflow[];
  /** Where runs live; its request book holds their port requests. */
  checkpoints: CheckpointStore;
  /**
   * Where agents inside workflows keep their tool calls, when that is not `checkpoints`
   * (SQLite and PostgreSQL are both): the runner reads the calls its runs wait on from here.
   */
  agentRequests?: Pick<RequestBook, 'getApproval'>;
  /** Binds an agent used inside a workflow to the run's store and model (default: as it is). */
  bindAgent?: (agent: Agent) => Agent | Promise<Agent>;
  now?: () => Date;
  /** Supersteps one call may run before the run fails with STEP_LIMIT (default 10 000). */
  maxSupersteps?: number;
  /**
   * How long a request takes answers when its port sets no `ttl`: '15m', '24h', '7d' or ms
   * (default COUNTERSIGN_APPROVAL_TTL, else 24h, as for agents' approvals).
   */
  requestTtl?: string | number;
  /** Warn this long before a request expires when its port sets no `warnBefore` (default COUNTERSIGN_WARN_BEFORE). */
  warnBefore?: string | number;
  /**
   * The audit trail for the runs' entries when `checkpoints` keeps none of its own (the
   * memory and file stores): each entry is appended right after the write it records, so a
   * crash in between loses the entry, never the write. Unused when `checkpoints.keepsAudit`
   * (SQLite, PostgreSQL): entries then commit in the write's own transaction. Neither: no
   * entries are written.
   */
  audit?: Pick<Store, 'appendAudit'>;
  /** Roles request ports need, by port id, for ports that do not declare one themselves. */
  portRoles?: Record<string, string>;
  /** The raiser and the customer may answer the run's port requests themselves (see decision-rights.ts). */
  selfApproval?: boolean;
}

/** Who starts a run, for whom (`origin` of its requests). */
export interface StartOptions {
  /** The authenticated caller starting it; they may not answer its requests. */
  by?: string;
  /** The customer it acts for; they may not answer its requests either. */
  customer?: string | null;
}

/** Who answers, with the roles the caller authenticated (undefined: not known here, as on the CLI). */
export interface RespondOptions {
  by?: string;
  roles?: readonly string[];
}

/** A request whose expiry `expire` recorded. */
export interface ExpiredWorkflowRequest {
  run: string;
  workflow: string;
  requestId: string;
  port: string;
  expiresAt: string;
}

export interface WorkflowRunner {
  /** Starts a run: commits its first checkpoint, then runs to its first wait or its end. */
  start(workflow: string, run: string, input: JsonValue, options?: StartOptions): Promise<RunView>;
  /**
   * Rebuilds the run from its latest checkpoint (or `from`) and continues it. Pending
   * requests come back with the same ids. Continuing from an earlier checkpoint starts a
   * new branch; the checkpoint itself is never changed. Requests decided meanwhile (a port
   * answered, an agent's call decided with `agent.decide`, an expiry) are applied.
   */
  resume(run: string, options?: { from?: string }): Promise<RunView>;
  /**
   * Answers a pending request of a run by its id (the run is found from the request's row),
   * once, then continues the run to its next wait or its end. A port request is answered
   * with data that fits the port (`decide`, verdict `answered`); a run's agent tool call with
   * `{ approved, reason? }`, through `agent.decide`. Past the request's `expiresAt` it fails
   * with EXPIRED and records nothing; decided already, ALREADY_DECIDED naming who; a stored
   * request that no longer matches what was raised, INTEGRITY_VIOLATION (audited).
   */
  answer(requestId: string, response: JsonValue, options?: RespondOptions): Promise<RunView>;
  /** `answer`, checking that the request belongs to `run` (NOT_FOUND otherwise). */
  respond(run: string, requestId: string, response: JsonValue, options?: RespondOptions): Promise<RunView>;
  /**
   * Records the expiry of port requests past their `expiresAt` (the request book's due-query,
   * the same compare-and-set as an answer; audited `request.expired`). It continues no run:
   * the next `resume` (or answer) of each applies it. Returns the expiries it recorded.
   * Agents' tool calls expire through their own path (the store watcher, `countersign expire`).
   */
  expire(): Promise<ExpiredWorkflowRequest[]>;
  history(run: string): Promise<CheckpointSummary[]>;
  /** One page of runs, newest first unless `query.sort` says otherwise (CheckpointStore.pageRuns). */
  pageRuns(query: RunPageQuery): Promise<RunPage>;
  /** Every run, oldest first: for tests and exports; a list shown to someone pages with `pageRuns`. */
  runs(): Promise<RunSummary[]>;
}

/** The audit `session` of a run's entries (an agent inside the run uses `wf.<run>.<executor>`). */
export function auditSessionOf(run: string): string {
  return runSessionOf(run);
}

/**
 * A pending request as its checkpoint stores it: the data before any version migration, and
 * the parties a checkpoint written before requests were rows recorded for an agent's call.
 */
interface StoredRequest {
  data: JsonValue;
  parties?: { raisedBy: string | null; customer: string | null };
}

/** Top-level fields of an object answer that its port's parsed answer no longer has. */
function droppedFields(sent: JsonValue, parsed: unknown): string[] {
  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isObject(sent) || !isObject(parsed)) return [];
  return Object.keys(sent).filter((key) => !Object.hasOwn(parsed, key));
}

/** How often a continuation retries after another process committed to the run first. */
const MAX_ATTEMPTS = 25;
/** Due requests expired per page of `expire`. */
const EXPIRY_PAGE = 100;

/** A request that has its decision already: who and when, in the error the loser gets. */
function decidedError(request: ApprovalRequest): Error {
  const decision = request.decision;
  const run = request.run ?? request.session;
  if (request.status === 'expired' || decision?.verdict === 'expired') {
    return new ExpiredError(
      `Request ${request.id} of run ${run} expired without an answer${decision ? ` (recorded at ${decision.at})` : ''} and can no longer be answered.`,
      { hint: 'Nothing was recorded; the run goes on without this answer.' },
    );
  }
  if (request.kind === 'tool-call' && decision !== null) return new AlreadyDecidedError(request.id, decision);
  return new RequestAnsweredError(
    run,
    request.id,
    decision?.by ?? 'unknown',
    decision?.at ?? 'an unknown time',
  );
}

export function createWorkflowRunner(options: WorkflowRunnerOptions): WorkflowRunner {
  const { checkpoints } = options;
  const now = options.now ?? (() => new Date());
  const maxSupersteps = options.maxSupersteps ?? 10_000;
  const warnBeforeMs = defaultWarningMs(options.warnBefore);
  const requestTtlMs =
    options.requestTtl !== undefined
      ? parseTtl(options.requestTtl, 'requestTtl of the workflow runner', now())
      : parseTtl(process.env.COUNTERSIGN_APPROVAL_TTL ?? '24h', 'COUNTERSIGN_APPROVAL_TTL', now());
  // A store that keeps its own trail takes entries with its writes; one written outside a
  // write (an integrity refusal) goes to it directly.
  const ownTrail =
    checkpoints.keepsAudit && typeof (checkpoints as Partial<Store>).appendAudit === 'function'
      ? (checkpoints as unknown as Pick<Store, 'appendAudit'>)
      : undefined;
  const auditTrail = checkpoints.keepsAudit ? ownTrail : options.audit;
  const portRoles = options.portRoles ?? {};
  const bindAgent = async (agent: Agent) => (options.bindAgent ? options.bindAgent(agent) : agent);
  const byName = new Map(options.workflows.map((workflow) => [workflow.name, workflow]));

  function workflowNamed(name: string): Workflow {
    const workflow = byName.get(name);
    if (workflow === undefined) {
      throw new NotFoundError(`There is no workflow named ${name}.`, {
        hint: `This app has: ${[...byName.keys()].join(', ') || 'no workflows'}.`,
      });
    }
    return workflow;
  }

  function stateFor(workflow: Workflow): WorkflowState {
    const namespace = workflow.stateNamespace;
    return {
      get: async <T extends JsonValue = JsonValue>(key: string) =>
        (await checkpoints.getState(namespace, key)) as T | undefined,
      set: (key, value) => checkpoints.setState(namespace, key, value),
      claim: (key, value) => checkpoints.claimState(namespace, key, value),
    };
  }

  async function requireLatest(run: string): Promise<StoredCheckpoint> {
    assertStoreId('run', run);
    const latest = await checkpoints.latestCheckpoint(run);
    if (latest === null) {
      throw new NotFoundError(`There is no run ${run}.`, { hint: 'List runs with `countersign runs`.' });
    }
    return latest;
  }

  /** The row a pending request waits on: a port request's in the run's book, an agent's call in the agents'. */
  async function rowOf(request: Pick<PendingRequest, 'id' | 'toolCall'>): Promise<ApprovalRequest | null> {
    const own = await checkpoints.getApproval(request.id);
    if (own !== null || request.toolCall !== true || options.agentRequests === undefined) return own;
    return options.agentRequests.getApproval(request.id);
  }

  /**
   * A port request of a checkpoint written before port requests were rows has none: it is
   * adopted now (insert-if-absent, the hash computed from the checkpoint as it stands).
   * An agent's call is never adopted: its row is the agent's.
   */
  async function adopt(
    workflow: Workflow,
    run: string,
    state: WorkflowRunState,
    request: PendingRequest,
  ): Promise<ApprovalRequest | null> {
    if (request.toolCall === true) return null;
    const { rows } = raisedRequests(
      workflow,
      run,
      { ...state, requests: [] },
      { ...state, requests: [request] },
    );
    const latest = await checkpoints.latestCheckpoint(run);
    const parties = latest === null ? undefined : storedRequestData(latest).get(request.id)?.parties;
    await checkpoints.adoptRequests(
      parties === undefined ? rows : rows.map((row) => ({ ...row, ...parties })),
    );
    return checkpoints.getApproval(request.id);
  }

  /** By id alone: the run's book first, then the agents'. */
  async function findRow(requestId: string): Promise<ApprovalRequest | null> {
    return (
      (await checkpoints.getApproval(requestId)) ??
      (await options.agentRequests?.getApproval(requestId)) ??
      null
    );
  }

  /**
   * The one compare-and-set, with its audit events: in its own transaction when the store
   * keeps the trail, else appended to `options.audit` right after a won decision.
   */
  async function decideAudited(id: string, decision: Decision, events: AuditEvent[]) {
    const result = checkpoints.keepsAudit
      ? await checkpoints.decide(id, decision, events)
      : await checkpoints.decide(id, decision);
    if (result.won && !checkpoints.keepsAudit && auditTrail !== undefined)
      await auditTrail.appendAudit(events, decision.at);
    if (result.won) signalDecision(result.request, decision);
    return result;
  }

  /** As decideAudited, for a checkpoint and the port requests it raises: all or nothing. */
  async function saveAudited(
    checkpoint: StoredCheckpoint,
    expectedLatest: string,
    events: AuditEvent[],
    requests: ApprovalRequest[],
  ): Promise<SaveCheckpointResult> {
    const raised = requests.length > 0 ? { requests } : {};
    if (events.length === 0) return checkpoints.saveCheckpoint(checkpoint, expectedLatest, raised);
    if (checkpoints.keepsAudit)
      return checkpoints.saveCheckpoint(checkpoint, expectedLatest, { ...raised, audit: events });
    const result = await checkpoints.saveCheckpoint(checkpoint, expectedLatest, raised);
    if (result.saved && auditTrail !== undefined) await auditTrail.appendAudit(events, checkpoint.createdAt);
    return result;
  }

  /**
   * The binding of a port request, checked before it is answered and before its answer is
   * applied: the row's payload still hashes to what was raised, and the run's checkpoint
   * still waits on that very payload, at that port of that workflow (what the inbox names),
   * and for the parties the row names. Tool calls are the
   * agent's to check (it does, before deciding and before running). Null when intact.
   */
  function portBindingProblem(
    workflow: Workflow,
    row: ApprovalRequest,
    pending: PendingRequest,
    state: WorkflowRunState,
    /** The request as the checkpoint stores it (its data before any version migration). */
    stored?: StoredRequest,
  ): string | null {
    const own = bindingProblem(requestBinding(row));
    if (own !== null) return own;
    if (row.tool !== pending.port || row.agent !== workflow.name)
      return "the request's port or workflow differs from the run's checkpoint";
    // As stored, or as this version reads it (a registered migration may change the data of
    // a waiting request; the row was raised from one of the two).
    const hashes = [pending.data, ...(stored === undefined ? [] : [stored.data])].map((data) => {
      try {
        return sha256Hex(canonicalJson(data));
      } catch {
        return null;
      }
    });
    if (!hashes.includes(row.argsHash))
      return "the run's checkpoint no longer holds the request data that was raised";
    // The parties the checkpoint names: the run's origin, or (checkpoints written before
    // requests were rows) those it recorded for an agent's call it stood for.
    const expected = stored?.parties ?? { raisedBy: state.origin.by, customer: state.origin.customer };
    if (row.raisedBy !== expected.raisedBy || row.customer !== expected.customer)
      return "the request's parties differ from the run's (who started it, for which customer)";
    // The deadline is the checkpoint's too: a later expires_at on the row would reopen a
    // request that already expired.
    if (row.expiresAt !== (pending.expiresAt ?? NEVER_EXPIRES))
      return "the request's expiry differs from the one the run's checkpoint recorded";
    return null;
  }

  /** Request id → the request as the checkpoint's body holds it; empty when it does not read as one. */
  function storedRequestData(checkpoint: StoredCheckpoint): Map<string, StoredRequest> {
    try {
      const body = decodeCheckpointBody(
        checkpoint.body,
        `Checkpoint ${checkpoint.id} of run ${checkpoint.run}`,
      );
      // `parties` is no longer part of the format (the schema drops it): read it raw.
      const raw = (checkpoint.body as { state?: { requests?: Array<{ id?: unknown; parties?: unknown }> } })
        .state?.requests;
      const text = (value: unknown) => (typeof value === 'string' ? value : null);
      const partiesOf = (id: string) => {
        const parties = raw?.find((request) => request.id === id)?.parties;
        if (typeof parties !== 'object' || parties === null) return undefined;
        const { raisedBy, customer } = parties as { raisedBy?: unknown; customer?: unknown };
        return { raisedBy: text(raisedBy), customer: text(customer) };
      };
      return new Map(
        body.state.requests.map((request): [string, StoredRequest] => {
          const parties = partiesOf(request.id);
          return [
            request.id,
            parties === undefined ? { data: request.data } : { data: request.data, parties },
          ];
        }),
      );
    } catch {
      return new Map();
    }
  }

  /** Audits the refusal (`tamper.refused`, as for a tool call) and returns the error to throw. */
  async function refuseTampered(row: ApprovalRequest, problem: string, actor: string): Promise<Error> {
    await auditTrail?.appendAudit(
      [
        {
          kind: 'tamper.refused',
          session: row.session,
          requestId: row.id,
          actor,
          data: {
            problem,
            argsHash: row.argsHash,
            kind: 'port',
            run: row.run ?? row.session,
            port: row.tool,
          },
        },
      ],
      now().toISOString(),
    );
    return bindingError(row.id, problem, 'answering');
  }

  const expiryEvent = portExpiryEvent;

  /** Records that a port request expired, once, as its decision; returns the row as it stands. */
  async function recordExpiry(row: ApprovalRequest, at: string): Promise<ApprovalRequest | null> {
    const decision: Decision = {
      verdict: 'expired',
      by: 'countersign',
      reason: EXPIRED_REASON,
      at,
      kind: 'expiry',
    };
    const result = await decideAudited(row.id, decision, [expiryEvent(row)]);
    return result.request;
  }

  /**
   * Decided requests become messages: a port's answer travels on from the port (or back to
   * the executor that asked, its onResponse), an agent's decided call goes back to its
   * executor, whose session carries on. A port request past its expiry is expired first.
   * An expiry goes back to the executor that asked (`expired: true`); a request reached
   * along an edge has nothing to send on, so its branch ends and the run records it in
   * `expired`. A port request whose binding broke stops here: INTEGRITY_VIOLATION, audited.
   */
  async function applyAnswers(
    workflow: Workflow,
    run: string,
    state: WorkflowRunState,
    stored: ReadonlyMap<string, StoredRequest>,
  ): Promise<WorkflowRunState> {
    if (state.requests.length === 0) return state;
    let next: WorkflowRunState | undefined;
    const at = now().toISOString();
    for (const request of state.requests) {
      let row = (await rowOf(request)) ?? (await adopt(workflow, run, state, request));
      if (row === null) continue; // nothing to apply (an agent's call in a store this runner does not see)
      if (row.kind === 'port' && row.status === 'pending' && row.expiresAt <= at) {
        row = await recordExpiry(row, at);
        if (row === null) continue;
      }
      if (row.status === 'pending' || row.decision === null) {
        // An agent's call past its expiry goes back to the agent, whose session expires it.
        if (!(request.toolCall === true && row.expiresAt <= at)) continue;
      }
      if (row.kind === 'port') {
        const problem = portBindingProblem(workflow, row, request, state, stored.get(request.id));
        if (problem !== null) throw await refuseTampered(row, problem, 'countersign');
      }
      const decision = row.decision;
      const expired = decision === null || decision.verdict === 'expired';
      next ??= {
        ...state,
        messages: [...state.messages],
        requests: [...state.requests],
        expired: [...state.expired],
      };
      next.requests = next.requests.filter((pending) => pending.id !== request.id);
      const meta = {
        requestId: request.id,
        port: request.port,
        request: request.data,
        by: decision?.by ?? 'countersign',
        at: decision?.at ?? at,
      };
      const payload: JsonValue =
        row.kind === 'tool-call'
          ? {
              approved: decision?.verdict === 'approved',
              ...(decision?.reason ? { reason: decision.reason } : {}),
            }
          : (decision?.response ?? null);
      if (expired && request.askedBy === null) {
        next.expired.push({
          requestId: request.id,
          port: request.port,
          expiresAt: request.expiresAt ?? meta.at,
          at: meta.at,
        });
      } else if (request.askedBy !== null) {
        next.messages.push({
          from: request.port,
          to: request.askedBy,
          payload: expired ? null : payload,
          answer: { ...meta, reply: true, ...(expired ? { expired: true } : {}) },
        });
      } else {
        route(workflow, next, request.port, payload, {
          at: meta.at,
          requestTtlMs,
          answer: { ...meta, reply: false },
        });
      }
    }
    return next ?? state;
  }

  /** The rows and `request.raised` entries for the port requests a checkpoint raises. */
  function raisedRequests(
    workflow: Workflow,
    run: string,
    before: WorkflowRunState,
    after: WorkflowRunState,
  ): { rows: ApprovalRequest[]; events: AuditEvent[] } {
    const known = new Set(before.requests.map((request) => request.id));
    const rows: ApprovalRequest[] = [];
    const events: AuditEvent[] = [];
    for (const request of after.requests) {
      if (known.has(request.id) || request.toolCall === true) continue;
      const node = workflow.nodes.get(request.port);
      if (node === undefined || node.kind !== 'port') throw new Error(`port ${request.port} vanished`);
      const port = node as RequestPort<unknown, unknown>;
      const context = { run, workflow: workflow.name, customer: after.origin.customer };
      const effect = port.effectOf(request.data, context);
      const row: ApprovalRequest = {
        id: request.id,
        kind: 'port',
        session: runSessionOf(run),
        run,
        agent: workflow.name,
        callId: request.askedBy ?? request.port,
        tool: request.port,
        args: request.data,
        ...bindArgs(request.data),
        effect,
        createdAt: request.createdAt,
        expiresAt: request.expiresAt ?? NEVER_EXPIRES,
        status: 'pending',
        decision: null,
        raisedBy: after.origin.by,
        customer: after.origin.customer,
        requiredRole: portRole(workflow, request.port, portRoles),
        claim: null,
        escalatedTo: null,
        // Only a port with a known expiry nudges: a request that never expires warns of nothing.
        nudges: planNudges(
          withDefaultWarning(port.nudges, warnBeforeMs),
          request.createdAt,
          request.expiresAt ?? NEVER_EXPIRES,
        ),
        ...waitingFields(effect, { approvalsNeeded: port.approvals }),
      };
      rows.push(row);
      events.push({
        kind: 'request.raised',
        session: row.session,
        requestId: row.id,
        actor: workflow.name,
        data: {
          kind: 'port',
          run,
          workflow: workflow.name,
          version: workflow.version,
          port: request.port,
          args: row.argsJson,
          argsHash: row.argsHash,
          effect: row.effect,
          askedBy: request.askedBy,
          expiresAt: request.expiresAt,
          // What a live view of the request needs, as for a tool call's entry.
          createdAt: row.createdAt,
          raisedBy: row.raisedBy,
          customer: row.customer,
          requiredRole: row.requiredRole,
          ...(row.nudges === null ? {} : { nudges: row.nudges }),
        },
      });
    }
    return { rows, events };
  }

  function checkpointOf(
    workflow: Workflow,
    run: string,
    state: WorkflowRunState,
    parent: StoredCheckpoint | null,
    seq: number,
    superstep: number,
  ): StoredCheckpoint {
    const body: CheckpointBody = { format: CHECKPOINT_FORMAT, contract: workflow.contract, state };
    return {
      id: newId('cp'),
      run,
      seq,
      parent: parent?.id ?? null,
      superstep,
      createdAt: now().toISOString(),
      workflow: workflow.name,
      version: workflow.version,
      status: statusOf(state),
      // In clear beside the body, so erasure and lists find the run by its customer.
      customer: state.origin.customer,
      body: body as unknown as JsonValue,
    };
  }

  /**
   * Runs supersteps from `base` until nothing is pending, committing a checkpoint after each
   * (its parent the one before, its position after the run's latest). `null` means another
   * process committed to the run meanwhile: nothing of ours was kept, and the caller retries.
   */
  async function advance(
    workflow: Workflow,
    base: StoredCheckpoint,
    restored: WorkflowRunState,
    latest: StoredCheckpoint,
    forceWrite: boolean,
  ): Promise<RunView | null> {
    const run = base.run;
    const state = stateFor(workflow);
    let parent = base;
    let head = latest;
    let current = restored;
    let mustWrite = forceWrite;
    let steps = 0;
    // The base's requests as stored (before any version migration), for the binding check.
    let stored = storedRequestData(base);
    for (;;) {
      const applied = await applyAnswers(workflow, run, current, stored);
      stored = new Map();
      // Answers consumed change the state even when nothing is sent on (an expiry that ends
      // a branch): the checkpoint must say so.
      if (applied !== current) mustWrite = true;
      current = applied;
      if (current.messages.length === 0 && !mustWrite) break;
      let next: WorkflowRunState;
      let superstep = parent.superstep;
      if (current.messages.length === 0) {
        next = current;
      } else if (steps >= maxSupersteps) {
        next = {
          ...current,
          error: {
            code: 'STEP_LIMIT',
            message: `The run went ${maxSupersteps} supersteps without waiting or ending; it was stopped.`,
            executor: null,
          },
        };
      } else {
        const result = await runSuperstep(
          {
            workflow,
            run,
            superstep: parent.superstep + 1,
            base: parent.id,
            state,
            bindAgent,
            now,
            requestTtlMs,
          },
          current,
        );
        steps += 1;
        if (result.ok) {
          next = result.state;
          superstep = parent.superstep + 1;
        } else {
          next = { ...current, error: result.error };
        }
      }
      const raised = raisedRequests(workflow, run, current, next);
      const saved = await saveAudited(
        checkpointOf(workflow, run, next, parent, head.seq + 1, superstep),
        head.id,
        raised.events,
        raised.rows,
      );
      if (!saved.saved) return null;
      parent = head = saved.checkpoint;
      current = next;
      mustWrite = false;
      if (current.error !== null) break;
    }
    return toRunView(parent, current);
  }

  /** Continues the run from `from` (default: its latest), retrying when another process got there first. */
  async function continueRun(run: string, from?: string): Promise<RunView> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const latest = await requireLatest(run);
      let base = latest;
      if (from !== undefined && from !== latest.id) {
        const found = await checkpoints.getCheckpoint(run, from);
        if (found === null) {
          throw new NotFoundError(`Run ${run} has no checkpoint ${from}.`, {
            hint: `List them with \`countersign run history ${run}\`.`,
          });
        }
        base = found;
      }
      const workflow = workflowNamed(base.workflow);
      let restored = restoreRunState(workflow, base);
      // A failed run is resumed by running the superstep that failed again.
      if (restored.error !== null) restored = { ...restored, error: null };
      // A branch, or a run upgraded to this version, gets a checkpoint of its own even when
      // nothing else runs, so the run's latest says where it now stands.
      const forceWrite =
        base.id !== latest.id || base.version !== workflow.version || statusOf(restored) !== base.status;
      const view = await advance(workflow, base, restored, latest, forceWrite);
      if (view !== null) return view;
    }
    throw new SessionBusyError(`Run ${run} kept changing under this process; nothing more was done.`, {
      hint: 'Another process is continuing it; look with `countersign run history`.',
    });
  }

  /** An agent's call the run waits on, decided through the agent's own path, then the run continues. */
  async function decideToolCall(
    workflow: Workflow,
    row: ApprovalRequest & { run: string },
    pending: PendingRequest,
    response: JsonValue,
    decider: Decider,
  ): Promise<RunView> {
    const node = pending.askedBy === null ? undefined : workflow.nodes.get(pending.askedBy);
    if (!isAgentExecutor(node))
      throw new Error(`request ${row.id} is a tool call but ${pending.askedBy} runs no agent`);
    const parsed = approvalAnswerSchema.safeParse(response);
    if (!parsed.success) {
      throw new InvalidInputError(
        `The answer to tool call ${row.id} must be { "approved": true|false, "reason"?: text }: ${describeIssue(parsed.error).detail}. The request is still waiting.`,
      );
    }
    const agent = (await bindAgent(node.agent)).with({ run: row.run });
    // Separation of duties, binding, decided-once and the audit are the agent's own.
    const turn: TurnResult = await agent.decide(row.id, {
      approved: parsed.data.approved,
      by: decider.name,
      ...(parsed.data.reason ? { reason: parsed.data.reason } : {}),
      ...(decider.roles === null ? {} : { roles: decider.roles }),
    });
    void turn;
    return continueRun(row.run);
  }

  async function answer(
    requestId: string,
    response: JsonValue,
    respondOptions: RespondOptions = {},
    inRun?: string,
    /** Tries after losing a partial approval's compare-and-set to another approver. */
    attempt = 1,
  ): Promise<RunView> {
    assertStoreId('request', requestId);
    let row = await findRow(requestId);
    if (row === null && inRun !== undefined) {
      // Perhaps a request of a checkpoint written before port requests were rows.
      const latest = await requireLatest(inRun);
      const workflow = workflowNamed(latest.workflow);
      const state = restoreRunState(workflow, latest);
      const pending = state.requests.find((request) => request.id === requestId);
      if (pending !== undefined) row = await adopt(workflow, inRun, state, pending);
    }
    if (row === null || row.run === null || (inRun !== undefined && row.run !== inRun)) {
      let hint = 'List waiting requests with `countersign pending`.';
      if (inRun !== undefined) {
        const current = await requireLatest(inRun);
        const waiting = restoreRunState(workflowNamed(current.workflow), current).requests;
        hint = waiting.length
          ? `Pending now: ${waiting.map((request) => `${request.id} (${request.port})`).join(', ')}.`
          : 'Nothing of it is pending.';
      }
      throw new NotFoundError(
        inRun === undefined
          ? `There is no request ${requestId} of a workflow run.`
          : `Run ${inRun} has no request ${requestId}.`,
        { hint },
      );
    }
    const run = row.run;
    const decider: Decider = {
      name: respondOptions.by?.trim() || 'unknown',
      roles: respondOptions.roles ?? null,
    };
    const latest = await requireLatest(run);
    const workflow = workflowNamed(latest.workflow);
    const state = restoreRunState(workflow, latest);
    const pending = state.requests.find((request) => request.id === requestId);
    if (row.status !== 'pending') throw decidedError(row);
    if (pending === undefined) {
      throw new NotFoundError(`Run ${run} is not waiting on request ${requestId}.`, {
        hint: state.requests.length
          ? `Pending now: ${state.requests.map((request) => `${request.id} (${request.port})`).join(', ')}.`
          : `Nothing is pending (the run is ${statusOf(state)}).`,
      });
    }
    // The row's kind must be the one the checkpoint waits on: an edited kind would send an
    // agent's call down the port path (or a port's answer to an agent that never asked).
    if ((row.kind === 'tool-call') !== (pending.toolCall === true))
      throw await refuseTampered(
        row,
        "the request's kind differs from what the run's checkpoint waits on",
        decider.name,
      );
    if (row.kind === 'tool-call')
      return decideToolCall(workflow, { ...row, run }, pending, response, decider);

    // A port request. Binding first: nothing is judged or recorded on a request that changed.
    const problem = portBindingProblem(
      workflow,
      row,
      pending,
      state,
      storedRequestData(latest).get(requestId),
    );
    if (problem !== null) throw await refuseTampered(row, problem, decider.name);
    const at = now().toISOString();
    if (row.expiresAt <= at) {
      throw new ExpiredError(
        `Request ${requestId} of run ${run} expired at ${row.expiresAt} and can no longer be answered.`,
        {
          hint: `Nothing was recorded. The run goes on without this answer when it next continues (\`countersign run resume ${run}\`).`,
        },
      );
    }
    const port = workflow.nodes.get(pending.port);
    if (port === undefined || port.kind !== 'port')
      throw new Error(`port ${pending.port} vanished after restore`);
    const parsed = port.response.safeParse(response);
    if (!parsed.success) {
      throw new InvalidInputError(
        `The answer does not fit port ${port.id}: ${describeIssue(parsed.error).detail}. The request is still waiting.`,
      );
    }
    // What is recorded and audited is the answer as sent: fields the port drops (an `amount`
    // beside `approved`) would stand in the trail as if they had been approved.
    const dropped = droppedFields(response, parsed.data);
    if (dropped.length > 0) {
      throw new InvalidInputError(
        `The answer has fields port ${port.id} does not take: ${dropped.join(', ')}. The request is still waiting.`,
        { hint: "Send only the fields of the port's response schema (GET /v1/requests/{id} shows it)." },
      );
    }
    // Separation of duties from the row's parties, before anything is recorded. The role is
    // the row's and the port's as configured now: an edited row cannot drop it.
    const parties = {
      raisedBy: row.raisedBy,
      customer: row.customer,
      requiredRole: row.requiredRole,
      escalatedTo: escalationInForce(row, port.nudges, new Date(at)),
      selfApproval: options.selfApproval ?? false,
      approvedBy: row.approvals.map((approval) => approval.by),
    };
    assertMayDecide(parties, decider, 'answer');
    const configured = portRole(workflow, port.id, portRoles);
    if (configured !== null && configured !== row.requiredRole)
      assertMayDecide({ ...parties, requiredRole: configured }, decider, 'answer');
    // A quorum (the port's `approvals`, or the row's if more): an approval that is not the
    // last is recorded on its own (recordApproval); a rejection vetoes; the last one answers.
    const needed = Math.max(row.approvalsNeeded, port.approvals);
    const approves = isApproval(response);
    const approval = { by: decider.name, at, reason: null };
    if (needed > 1 && approves && row.approvals.length + 1 < needed) {
      const recorded = await checkpoints.recordApproval(
        requestId,
        {
          revision: row.revision,
          at,
          approvals: [...row.approvals, approval],
          edit: null,
          requiredRole: row.requiredRole,
          approvalsNeeded: needed,
        },
        [
          {
            kind: 'request.approval-added',
            session: row.session,
            requestId,
            actor: decider.name,
            data: {
              tool: pending.port,
              args: row.argsJson,
              argsHash: row.argsHash,
              reason: null,
              approvals: row.approvals.length + 1,
              approvalsNeeded: needed,
              requiredRole: row.requiredRole,
              rerouted: false,
            },
          },
        ],
      );
      if (recorded.won) return continueRun(run);
      // Another approver got there first: judged again on the row as it is now.
      if (recorded.request?.status === 'pending' && attempt < 3)
        return answer(requestId, response, respondOptions, inRun, attempt + 1);
      throw decidedError(recorded.request ?? row);
    }
    const quorum = needed > 1 ? { approvals: approves ? [...row.approvals, approval] : row.approvals } : {};
    // What the audit binds: the exact answer recorded, as canonical JSON, and its digest.
    const responseJson = canonicalJson(response);
    const result = await decideAudited(
      requestId,
      { verdict: 'answered', response, by: decider.name, reason: null, at, kind: 'person', ...quorum },
      [
        {
          kind: 'request.decided',
          session: row.session,
          requestId,
          actor: decider.name,
          data: {
            kind: 'port',
            verdict: 'answered',
            run,
            workflow: workflow.name,
            port: pending.port,
            response: responseJson,
            responseHash: sha256Hex(responseJson),
            ...claimOverridden(row, decider.name, at),
          },
        },
      ],
    );
    if (!result.won) throw decidedError(result.request ?? row);
    return continueRun(run);
  }

  return {
    async start(name, run, input, startOptions = {}) {
      assertStoreId('run', run);
      const workflow = workflowNamed(name);
      const start = workflow.nodes.get(workflow.start);
      if (start === undefined || start.kind !== 'executor')
        throw new Error(`workflow ${name} lost its start`);
      const parsed = start.input.safeParse(input);
      if (!parsed.success) {
        throw new InvalidInputError(
          `The input does not fit workflow ${name}: ${describeIssue(parsed.error).detail}.`,
        );
      }
      const by = startOptions.by?.trim();
      const state: WorkflowRunState = {
        ...emptyRunState(),
        messages: [{ from: null, to: workflow.start, payload: input }],
        origin: { by: by ? by : null, customer: startOptions.customer ?? null },
      };
      const first = checkpointOf(workflow, run, state, null, 0, 0);
      const saved = await checkpoints.saveCheckpoint(first, null);
      if (!saved.saved) {
        throw new InvalidInputError(`Run ${run} already exists.`, {
          hint: `Continue it with \`countersign run resume ${run}\`, or start with another --run id.`,
        });
      }
      const view = await advance(workflow, saved.checkpoint, state, saved.checkpoint, false);
      return view ?? continueRun(run);
    },

    resume(run, resumeOptions = {}) {
      return continueRun(run, resumeOptions.from);
    },

    answer(requestId, response, respondOptions) {
      return answer(requestId, response, respondOptions);
    },

    async respond(run, requestId, response, respondOptions) {
      assertStoreId('run', run);
      await requireLatest(run);
      return answer(requestId, response, respondOptions, run);
    },

    async expire() {
      const at = now().toISOString();
      const expired: ExpiredWorkflowRequest[] = [];
      // Pages of the due-query: each expired row leaves it, so the next page is the rest.
      for (let page = 0; page < 1000; page++) {
        const due = await checkpoints.listDue({ at, limit: EXPIRY_PAGE, kind: 'port' });
        let won = 0;
        for (const row of due) {
          if (row.run === null) continue;
          const decided = await recordExpiry(row, at);
          if (decided?.decision?.at !== at || decided.decision.kind !== 'expiry') continue;
          won += 1;
          expired.push({
            run: row.run,
            workflow: row.agent,
            requestId: row.id,
            port: row.tool,
            expiresAt: row.expiresAt,
          });
        }
        if (due.length < EXPIRY_PAGE || won === 0) break;
      }
      return expired;
    },

    async history(run) {
      await requireLatest(run);
      return checkpoints.checkpointHistory(run);
    },

    pageRuns(query) {
      return checkpoints.pageRuns(query);
    },

    runs() {
      return checkpoints.listRuns();
    },
  };
}

/** An approval-shaped answer that approves (`{approved: true, …}`): what a port's quorum counts. */
function isApproval(response: JsonValue): boolean {
  return (
    typeof response === 'object' &&
    response !== null &&
    !Array.isArray(response) &&
    response.approved === true
  );
}
