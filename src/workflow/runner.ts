import type { Agent } from '../agent/create-agent.ts';
import type { AuditEvent } from '../core/audit.ts';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import { assertMayDecide } from '../core/decision-rights.ts';
import { parseDuration } from '../core/duration.ts';
import { ExpiredError } from '../core/errors/expired-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import { RequestAnsweredError } from '../core/errors/request-answered-error.ts';
import { SessionBusyError } from '../core/errors/session-busy-error.ts';
import { newId } from '../core/ids.ts';
import type { JsonValue } from '../core/json.ts';
import { assertStoreId } from '../store/checkpoint-rules.ts';
import type {
  AnswerResult,
  CheckpointStore,
  CheckpointSummary,
  RequestAnswer,
  RunSummary,
  SaveCheckpointResult,
  StoredCheckpoint,
} from '../store/checkpoint-store.ts';
import type { Store } from '../store/store.ts';
import { restoreRunState } from './compatibility.ts';
import type { Workflow } from './define-workflow.ts';
import type { WorkflowState } from './executor-context.ts';
import { portRole } from './port-role.ts';
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
  checkpoints: CheckpointStore;
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
  /**
   * The audit trail for `workflow.*` entries when `checkpoints` keeps none of its own (the
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
   * new branch; the checkpoint itself is never changed.
   */
  resume(run: string, options?: { from?: string }): Promise<RunView>;
  /**
   * Answers a pending request once, then continues the run to its next wait or its end. Past
   * the request's `expiresAt` it fails with EXPIRED and records nothing.
   */
  respond(run: string, requestId: string, response: JsonValue, options?: RespondOptions): Promise<RunView>;
  /**
   * Records the expiry of every request past its `expiresAt` in the runs waiting for input
   * (answer-once, like an answer; audited `workflow.expired`). It continues no run: the next
   * `resume` (or answer) of each applies it. Returns the expiries it recorded.
   */
  expire(): Promise<ExpiredWorkflowRequest[]>;
  history(run: string): Promise<CheckpointSummary[]>;
  runs(): Promise<RunSummary[]>;
}

/** The audit `session` of a run's entries (an agent inside the run uses `wf.<run>.<executor>`). */
export function auditSessionOf(run: string): string {
  return `wf.${run}`;
}

const isOverdue = (request: PendingRequest, at: string): request is PendingRequest & { expiresAt: string } =>
  request.expiresAt !== null && request.expiresAt <= at;

/** A later answer to a request that has one: the first stands (an expiry included). */
function answeredError(run: string, requestId: string, answer: RequestAnswer): Error {
  if (answer.expired) {
    return new ExpiredError(
      `Request ${requestId} of run ${run} expired without an answer (recorded at ${answer.at}) and can no longer be answered.`,
      { hint: 'Nothing was recorded; the run goes on without this answer.' },
    );
  }
  return new RequestAnsweredError(run, requestId, answer.by, answer.at);
}

/** How often a continuation retries after another process committed to the run first. */
const MAX_ATTEMPTS = 25;

export function createWorkflowRunner(options: WorkflowRunnerOptions): WorkflowRunner {
  const { checkpoints } = options;
  const now = options.now ?? (() => new Date());
  const maxSupersteps = options.maxSupersteps ?? 10_000;
  const requestTtlMs = parseDuration(
    options.requestTtl ?? process.env.COUNTERSIGN_APPROVAL_TTL ?? '24h',
    'the request TTL',
  );
  const auditTrail = options.audit;
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

  /**
   * Commits an answer with its audit events: in its own transaction when the store keeps the
   * trail, else appended to `options.audit` right after a won answer. A lost answer writes none.
   */
  async function answerAudited(answer: RequestAnswer, events: AuditEvent[]): Promise<AnswerResult> {
    if (checkpoints.keepsAudit) return checkpoints.answerRequest(answer, { audit: events });
    const result = await checkpoints.answerRequest(answer);
    if (result.won && auditTrail !== undefined) await auditTrail.appendAudit(events, answer.at);
    return result;
  }

  /** As answerAudited, for a checkpoint: entries only when it was saved. */
  async function saveAudited(
    checkpoint: StoredCheckpoint,
    expectedLatest: string,
    events: AuditEvent[],
  ): Promise<SaveCheckpointResult> {
    if (events.length === 0) return checkpoints.saveCheckpoint(checkpoint, expectedLatest);
    if (checkpoints.keepsAudit)
      return checkpoints.saveCheckpoint(checkpoint, expectedLatest, { audit: events });
    const result = await checkpoints.saveCheckpoint(checkpoint, expectedLatest);
    if (result.saved && auditTrail !== undefined) await auditTrail.appendAudit(events, checkpoint.createdAt);
    return result;
  }

  /** Records that `request` expired, once, as its answer; returns the answer that stands. */
  function recordExpiry(
    run: string,
    workflow: string,
    request: PendingRequest & { expiresAt: string },
    at: string,
  ): Promise<AnswerResult> {
    return answerAudited(
      { run, requestId: request.id, response: null, by: 'countersign', at, expired: true },
      [
        {
          kind: 'workflow.expired',
          session: auditSessionOf(run),
          requestId: request.id,
          actor: 'countersign',
          data: { run, workflow, port: request.port, expiresAt: request.expiresAt },
        },
      ],
    );
  }

  /**
   * Answers recorded for pending requests become messages from their ports; a request past
   * its expiry without one is answered as expired first. An expiry goes back to the executor
   * that asked (`onResponse`, `expired: true`); a request reached along an edge has nothing to
   * send on, so its branch ends and the run records it in `expired`.
   */
  async function applyAnswers(
    workflow: Workflow,
    run: string,
    state: WorkflowRunState,
  ): Promise<WorkflowRunState> {
    if (state.requests.length === 0) return state;
    let next: WorkflowRunState | undefined;
    const at = now().toISOString();
    for (const request of state.requests) {
      let answer = await checkpoints.getAnswer(run, request.id);
      if (answer === null && isOverdue(request, at)) {
        answer = (await recordExpiry(run, workflow.name, request, at)).answer;
      }
      if (answer === null) continue;
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
        by: answer.by,
        at: answer.at,
      };
      if (answer.expired && request.askedBy === null) {
        next.expired.push({
          requestId: request.id,
          port: request.port,
          expiresAt: request.expiresAt ?? answer.at,
          at: answer.at,
        });
      } else if (request.askedBy !== null) {
        next.messages.push({
          from: request.port,
          to: request.askedBy,
          payload: answer.expired ? null : answer.response,
          answer: { ...meta, reply: true, ...(answer.expired ? { expired: true } : {}) },
        });
      } else {
        route(workflow, next, request.port, answer.response, {
          at: answer.at,
          requestTtlMs,
          answer: { ...meta, reply: false },
        });
      }
    }
    return next ?? state;
  }

  /** `workflow.requested` for each request a checkpoint raises. */
  function requestedEvents(
    workflow: Workflow,
    run: string,
    before: WorkflowRunState,
    after: WorkflowRunState,
  ): AuditEvent[] {
    const known = new Set(before.requests.map((request) => request.id));
    return after.requests
      .filter((request) => !known.has(request.id))
      .map((request) => {
        const requestJson = canonicalJson(request.data);
        return {
          kind: 'workflow.requested',
          session: auditSessionOf(run),
          requestId: request.id,
          actor: workflow.name,
          data: {
            run,
            workflow: workflow.name,
            version: workflow.version,
            port: request.port,
            request: requestJson,
            requestHash: sha256Hex(requestJson),
            askedBy: request.askedBy,
            expiresAt: request.expiresAt,
          },
        };
      });
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
    for (;;) {
      const applied = await applyAnswers(workflow, run, current);
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
      const saved = await saveAudited(
        checkpointOf(workflow, run, next, parent, head.seq + 1, superstep),
        head.id,
        requestedEvents(workflow, run, current, next),
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

    async respond(run, requestId, response, respondOptions = {}) {
      const latest = await requireLatest(run);
      assertStoreId('request', requestId);
      const workflow = workflowNamed(latest.workflow);
      const state = restoreRunState(workflow, latest);
      const pending = state.requests.find((request) => request.id === requestId);
      const earlier = await checkpoints.getAnswer(run, requestId);
      if (earlier !== null) throw answeredError(run, requestId, earlier);
      if (pending === undefined) {
        throw new NotFoundError(`Run ${run} has no pending request ${requestId}.`, {
          hint: state.requests.length
            ? `Pending now: ${state.requests.map((request) => `${request.id} (${request.port})`).join(', ')}.`
            : `Nothing is pending (the run is ${statusOf(state)}).`,
        });
      }
      const at = now().toISOString();
      if (isOverdue(pending, at)) {
        throw new ExpiredError(
          `Request ${requestId} of run ${run} expired at ${pending.expiresAt} and can no longer be answered.`,
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
      const by = respondOptions.by?.trim() || 'unknown';
      // Separation of duties, before anything is recorded: the request's own parties (an
      // agent's call carries its raiser and customer), else the run's origin.
      const parties = pending.parties ?? {
        raisedBy: state.origin.by,
        customer: state.origin.customer,
        requiredRole: null,
        selfApproval: options.selfApproval ?? false,
      };
      assertMayDecide(
        {
          ...parties,
          requiredRole: parties.requiredRole ?? portRole(workflow, port.id, options.portRoles ?? {}),
        },
        { name: by, roles: respondOptions.roles ?? null },
        'answer',
      );
      // What the audit binds: the exact answer recorded, as canonical JSON, and its digest.
      const responseJson = canonicalJson(response);
      const result = await answerAudited({ run, requestId, response, by, at }, [
        {
          kind: 'workflow.answered',
          session: auditSessionOf(run),
          requestId,
          actor: by,
          data: {
            run,
            workflow: workflow.name,
            port: pending.port,
            response: responseJson,
            responseHash: sha256Hex(responseJson),
          },
        },
      ]);
      if (!result.won) throw answeredError(run, requestId, result.answer);
      return continueRun(run);
    },

    async expire() {
      const at = now().toISOString();
      const expired: ExpiredWorkflowRequest[] = [];
      for (const summary of await checkpoints.listRuns()) {
        if (summary.status !== 'awaiting_input') continue;
        const latest = await checkpoints.latestCheckpoint(summary.run);
        if (latest === null) continue;
        let requests: PendingRequest[];
        try {
          // Read as stored: expiry needs no workflow code, so this works without the app.
          requests = decodeCheckpointBody(latest.body, `Checkpoint ${latest.id} of run ${latest.run}`).state
            .requests;
        } catch {
          continue; // a damaged checkpoint is reported to whoever resumes the run
        }
        for (const request of requests) {
          if (!isOverdue(request, at)) continue;
          // Answered (or expired) already, but not applied yet: a read, not a losing write.
          if ((await checkpoints.getAnswer(summary.run, request.id)) !== null) continue;
          const result = await recordExpiry(summary.run, latest.workflow, request, at);
          if (!result.won) continue;
          expired.push({
            run: summary.run,
            workflow: latest.workflow,
            requestId: request.id,
            port: request.port,
            expiresAt: request.expiresAt,
          });
        }
      }
      return expired;
    },

    async history(run) {
      await requireLatest(run);
      return checkpoints.checkpointHistory(run);
    },

    runs() {
      return checkpoints.listRuns();
    },
  };
}
