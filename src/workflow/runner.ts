import type { Agent } from '../agent/create-agent.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import { RequestAnsweredError } from '../core/errors/request-answered-error.ts';
import { SessionBusyError } from '../core/errors/session-busy-error.ts';
import { newId } from '../core/ids.ts';
import type { JsonValue } from '../core/json.ts';
import { assertStoreId } from '../store/checkpoint-rules.ts';
import type {
  CheckpointStore,
  CheckpointSummary,
  RunSummary,
  StoredCheckpoint,
} from '../store/checkpoint-store.ts';
import { restoreRunState } from './compatibility.ts';
import type { Workflow } from './define-workflow.ts';
import type { WorkflowState } from './executor-context.ts';
import {
  CHECKPOINT_FORMAT,
  type CheckpointBody,
  emptyRunState,
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
}

export interface WorkflowRunner {
  /** Starts a run: commits its first checkpoint, then runs to its first wait or its end. */
  start(workflow: string, run: string, input: JsonValue): Promise<RunView>;
  /**
   * Rebuilds the run from its latest checkpoint (or `from`) and continues it. Pending
   * requests come back with the same ids. Continuing from an earlier checkpoint starts a
   * new branch; the checkpoint itself is never changed.
   */
  resume(run: string, options?: { from?: string }): Promise<RunView>;
  /** Answers a pending request once, then continues the run to its next wait or its end. */
  respond(run: string, requestId: string, response: JsonValue, options?: { by?: string }): Promise<RunView>;
  history(run: string): Promise<CheckpointSummary[]>;
  runs(): Promise<RunSummary[]>;
}

/** How often a continuation retries after another process committed to the run first. */
const MAX_ATTEMPTS = 25;

export function createWorkflowRunner(options: WorkflowRunnerOptions): WorkflowRunner {
  const { checkpoints } = options;
  const now = options.now ?? (() => new Date());
  const maxSupersteps = options.maxSupersteps ?? 10_000;
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

  /** Answers recorded for pending requests become messages from their ports. */
  async function applyAnswers(
    workflow: Workflow,
    run: string,
    state: WorkflowRunState,
  ): Promise<WorkflowRunState> {
    if (state.requests.length === 0) return state;
    let next: WorkflowRunState | undefined;
    for (const request of state.requests) {
      const answer = await checkpoints.getAnswer(run, request.id);
      if (answer === null) continue;
      next ??= { ...state, messages: [...state.messages], requests: [...state.requests] };
      next.requests = next.requests.filter((pending) => pending.id !== request.id);
      const meta = {
        requestId: request.id,
        port: request.port,
        request: request.data,
        by: answer.by,
        at: answer.at,
      };
      if (request.askedBy !== null) {
        next.messages.push({
          from: request.port,
          to: request.askedBy,
          payload: answer.response,
          answer: { ...meta, reply: true },
        });
      } else {
        route(workflow, next, request.port, answer.response, answer.at, { ...meta, reply: false });
      }
    }
    return next ?? state;
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
      current = await applyAnswers(workflow, run, current);
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
          { workflow, run, superstep: parent.superstep + 1, base: parent.id, state, bindAgent, now },
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
      const saved = await checkpoints.saveCheckpoint(
        checkpointOf(workflow, run, next, parent, head.seq + 1, superstep),
        head.id,
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
    async start(name, run, input) {
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
      const state: WorkflowRunState = {
        ...emptyRunState(),
        messages: [{ from: null, to: workflow.start, payload: input }],
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
      if (earlier !== null) throw new RequestAnsweredError(run, requestId, earlier.by, earlier.at);
      if (pending === undefined) {
        throw new NotFoundError(`Run ${run} has no pending request ${requestId}.`, {
          hint: state.requests.length
            ? `Pending now: ${state.requests.map((request) => `${request.id} (${request.port})`).join(', ')}.`
            : `Nothing is pending (the run is ${statusOf(state)}).`,
        });
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
      const result = await checkpoints.answerRequest({
        run,
        requestId,
        response,
        by: respondOptions.by?.trim() || 'unknown',
        at: now().toISOString(),
      });
      if (!result.won) throw new RequestAnsweredError(run, requestId, result.answer.by, result.answer.at);
      return continueRun(run);
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
