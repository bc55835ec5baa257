import type { Agent } from '../agent/create-agent.ts';
import { canonicalJson } from '../core/canonical-json.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { CountersignError } from '../core/errors/countersign-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { newId } from '../core/ids.ts';
import { expiryAfter, optionInstant } from '../core/instant.ts';
import type { JsonValue } from '../core/json.ts';
import { ATTR, markFailed, SPAN, withSpan } from '../core/tracing.ts';
import type { AnyExecutor, Workflow } from './define-workflow.ts';
import type { ExecutorContext, WorkflowState } from './executor-context.ts';
import type { PendingMessage, PendingRequest, RunError, WorkflowRunState } from './run-state.ts';
import { describeIssue } from './schema-hash.ts';

export interface SuperstepEnv {
  workflow: Workflow;
  run: string;
  /** The number of the superstep being run. */
  superstep: number;
  /** The checkpoint it starts from: part of every idempotency key. */
  base: string;
  state: WorkflowState;
  bindAgent: (agent: Agent) => Promise<Agent>;
  now: () => Date;
  /** How long a request takes answers when its port sets no `ttl`. */
  requestTtlMs: number;
}

export type SuperstepResult = { ok: true; state: WorkflowRunState } | { ok: false; error: RunError };

interface Effects {
  sends: JsonValue[];
  outputs: JsonValue[];
  requests: Array<{ port: string; data: JsonValue; expiresAt?: string; toolCall?: string }>;
}

/** Thrown inside a superstep to blame an executor; becomes the run's error. */
class ExecutorFailure extends Error {
  readonly executor: string | null;
  readonly code: string;
  constructor(executor: string | null, cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.executor = executor;
    this.code = CountersignError.is(cause) ? cause.code : 'EXECUTOR_ERROR';
  }
}

function asJson(value: unknown, what: string): JsonValue {
  try {
    canonicalJson(value);
  } catch (cause) {
    throw new InvalidInputError(`${what} is not JSON: ${(cause as Error).message}.`, { cause });
  }
  return structuredClone(value) as JsonValue;
}

/**
 * One superstep: every message pending in `before` is delivered (executors run side by
 * side, each one's messages in order); what they send is routed into the next state. The
 * result is all-or-nothing: if any executor throws, nothing it or the others did counts,
 * and the caller records the error against the state the superstep started from.
 */
export function runSuperstep(env: SuperstepEnv, before: WorkflowRunState): Promise<SuperstepResult> {
  const attributes = {
    [ATTR.run]: env.run,
    [ATTR.workflow]: env.workflow.name,
    [ATTR.superstep]: env.superstep,
    [ATTR.messages]: before.messages.length,
  };
  return withSpan(SPAN.superstep, attributes, async (span) => {
    const result = await superstepOnce(env, before);
    // A failed superstep is a result, not a throw: its code goes on the span all the same.
    if (!result.ok) markFailed(span, result.error.code);
    return result;
  });
}

async function superstepOnce(env: SuperstepEnv, before: WorkflowRunState): Promise<SuperstepResult> {
  const { workflow } = env;
  const groups = new Map<string, PendingMessage[]>();
  for (const message of before.messages) {
    const group = groups.get(message.to);
    if (group === undefined) groups.set(message.to, [message]);
    else group.push(message);
  }

  const settled = await Promise.allSettled(
    [...groups].map(async ([to, messages]) => {
      const node = workflow.nodes.get(to);
      if (node === undefined || node.kind !== 'executor') {
        throw new ExecutorFailure(
          to,
          new ConfigError(`Messages are pending for ${to}, which is not an executor.`),
        );
      }
      return deliver(env, node, messages, before.executors[to], before.origin);
    }),
  );
  const failure = settled.find((result) => result.status === 'rejected');
  if (failure !== undefined) {
    const reason = failure.reason;
    const error = reason instanceof ExecutorFailure ? reason : new ExecutorFailure(null, reason);
    return { ok: false, error: { code: error.code, message: error.message, executor: error.executor } };
  }

  const next: WorkflowRunState = {
    messages: [],
    requests: [...before.requests],
    fanIn: structuredClone(before.fanIn),
    executors: { ...before.executors },
    outputs: [...before.outputs],
    expired: [...before.expired],
    error: null,
    origin: before.origin,
  };
  const at = env.now().toISOString();
  try {
    for (const result of settled) {
      if (result.status !== 'fulfilled') continue;
      const { executor, effects, state, stateChanged } = result.value;
      if (stateChanged) {
        if (state === undefined) delete next.executors[executor];
        else next.executors[executor] = state;
      }
      for (const effect of effects) {
        next.outputs.push(...effect.outputs);
        for (const message of effect.sends)
          route(workflow, next, executor, message, { at, requestTtlMs: env.requestTtlMs });
        for (const request of effect.requests) {
          next.requests.push(
            createRequest(workflow, request.port, request.data, executor, {
              at,
              requestTtlMs: env.requestTtlMs,
              ...(request.expiresAt === undefined ? {} : { expiresAt: request.expiresAt }),
              ...(request.toolCall === undefined ? {} : { toolCall: request.toolCall }),
            }),
          );
        }
      }
    }
  } catch (error) {
    const failed = error instanceof ExecutorFailure ? error : new ExecutorFailure(null, error);
    return { ok: false, error: { code: failed.code, message: failed.message, executor: failed.executor } };
  }
  return { ok: true, state: next };
}

async function deliver(
  env: SuperstepEnv,
  executor: AnyExecutor,
  messages: PendingMessage[],
  initialState: JsonValue | undefined,
  origin: WorkflowRunState['origin'],
): Promise<{ executor: string; effects: Effects[]; state: JsonValue | undefined; stateChanged: boolean }> {
  let state = initialState;
  let stateChanged = false;
  const effects: Effects[] = [];
  for (const [index, message] of messages.entries()) {
    const effect: Effects = { sends: [], outputs: [], requests: [] };
    const answer = message.answer;
    const ctx: ExecutorContext<unknown> = {
      run: env.run,
      workflow: env.workflow.name,
      executor: executor.id,
      superstep: env.superstep,
      idempotencyKey: `${env.run}/${env.base}/${executor.id}/${index}`,
      state: env.state,
      origin: { ...origin },
      answered:
        answer === undefined
          ? null
          : {
              requestId: answer.requestId,
              port: answer.port,
              request: answer.request,
              by: answer.by,
              at: answer.at,
              expired: answer.expired === true,
            },
      getState: () => (state === undefined ? undefined : structuredClone(state)),
      setState(value) {
        if (executor.state !== undefined) {
          const parsed = executor.state.safeParse(value);
          if (!parsed.success) {
            throw new InvalidInputError(
              `The state of executor ${executor.id} does not fit its schema: ${describeIssue(parsed.error).detail}.`,
            );
          }
        }
        state = asJson(value, `The state of executor ${executor.id}`);
        stateChanged = true;
      },
      send(value) {
        effect.sends.push(checkedSend(executor, value));
      },
      output(value) {
        effect.outputs.push(asJson(value, `An output of executor ${executor.id}`));
      },
      request(port, data, options = {}) {
        if (!executor.ports.some((owned) => owned.id === port.id)) {
          throw new ConfigError(
            `Executor ${executor.id} asked on port ${port.id}, which is not one of its ports.`,
          );
        }
        // A parameter: normalised to the UTC form stores compare as text (an offset is the
        // instant the executor meant), not refused.
        const expiresAt =
          options.expiresAt === undefined ? undefined : optionInstant(options.expiresAt, 'expiresAt');
        effect.requests.push({
          port: port.id,
          data: asJson(data, `The request data for port ${port.id}`),
          ...(expiresAt === undefined ? {} : { expiresAt }),
          ...(options.toolCall === undefined ? {} : { toolCall: options.toolCall }),
        });
      },
      agent: env.bindAgent,
    };
    try {
      let returned: unknown;
      if (answer?.reply === true && answer.expired === true) {
        // Expired without an answer: there is no response to check, only the fact.
        returned = await executor.onResponse({ ...ctx.answered!, response: null }, ctx);
      } else if (answer?.reply === true) {
        const port = env.workflow.nodes.get(answer.port);
        const parsed = port?.kind === 'port' ? port.response.safeParse(message.payload) : undefined;
        if (parsed !== undefined && !parsed.success) {
          throw new InvalidInputError(
            `The answer on port ${answer.port} does not fit its schema: ${describeIssue(parsed.error).detail}.`,
          );
        }
        const response =
          parsed === undefined ? message.payload : asJson(parsed.data, `The answer on port ${answer.port}`);
        returned = await executor.onResponse({ ...ctx.answered!, response }, ctx);
      } else {
        const parsed = executor.input.safeParse(message.payload);
        if (!parsed.success) {
          throw new InvalidInputError(
            `Executor ${executor.id} was sent a message that does not fit its input: ${describeIssue(parsed.error).detail}.`,
          );
        }
        returned = await executor.handle(parsed.data, ctx);
      }
      if (returned !== undefined) {
        const sent = checkedSend(executor, returned);
        effect.sends.push(sent);
        if (env.workflow.outputs.has(executor.id)) effect.outputs.push(sent);
      }
    } catch (error) {
      throw new ExecutorFailure(executor.id, error);
    }
    effects.push(effect);
  }
  return { executor: executor.id, effects, state, stateChanged };
}

function checkedSend(executor: AnyExecutor, value: unknown): JsonValue {
  if (executor.output !== undefined) {
    const parsed = executor.output.safeParse(value);
    if (!parsed.success) {
      throw new InvalidInputError(
        `Executor ${executor.id} sent a message that does not fit its output: ${describeIssue(parsed.error).detail}.`,
      );
    }
  }
  return asJson(value, `A message from executor ${executor.id}`);
}

/** When a routed message is sent, and what a request it raises gets. */
export interface RouteOptions {
  at: string;
  /** How long a request takes answers when its port sets no `ttl`. */
  requestTtlMs: number;
  /** Set when the message is an answer travelling on from its port. */
  answer?: PendingMessage['answer'];
}

/** Routes one message along the edges leaving `from` (an executor, or a port carrying an answer). */
export function route(
  workflow: Workflow,
  next: WorkflowRunState,
  from: string,
  payload: JsonValue,
  options: RouteOptions,
): void {
  const { at, answer } = options;
  const deliverTo = (to: string, sender: string) => {
    const target = workflow.nodes.get(to);
    if (target?.kind === 'port') {
      try {
        next.requests.push(
          createRequest(workflow, to, payload, null, { at, requestTtlMs: options.requestTtlMs }),
        );
      } catch (error) {
        throw new ExecutorFailure(sender, error);
      }
    } else {
      next.messages.push({ from: sender, to, payload, ...(answer ? { answer } : {}) });
    }
  };
  const guarded = <T>(work: () => T): T => {
    try {
      return work();
    } catch (error) {
      throw new ExecutorFailure(from, error);
    }
  };
  for (const edge of workflow.edges) {
    if (edge.kind === 'direct' && edge.from === from) {
      if (edge.when === undefined || guarded(() => edge.when?.(payload))) deliverTo(edge.to, from);
    } else if (edge.kind === 'fan-out' && edge.from === from) {
      const chosen = edge.select ? guarded(() => edge.select?.(payload, edge.to) ?? []) : edge.to;
      for (const to of edge.to) if (chosen.includes(to)) deliverTo(to, from);
    } else if (edge.kind === 'fan-in' && edge.from.includes(from)) {
      const buffers = next.fanIn[edge.id] ?? {};
      next.fanIn[edge.id] = buffers;
      buffers[from] = [...(buffers[from] ?? []), payload];
      if (edge.from.every((source) => (buffers[source]?.length ?? 0) > 0)) {
        const batch = edge.from.map((source) => buffers[source]!.shift()!);
        for (const source of edge.from) if (buffers[source]?.length === 0) delete buffers[source];
        if (Object.keys(buffers).length === 0) delete next.fanIn[edge.id];
        next.messages.push({ from: edge.id, to: edge.to, payload: batch });
      }
    }
  }
}

function createRequest(
  workflow: Workflow,
  portId: string,
  data: JsonValue,
  askedBy: string | null,
  timing: { at: string; requestTtlMs: number; expiresAt?: string; toolCall?: string },
): PendingRequest {
  const { at } = timing;
  const port = workflow.nodes.get(portId);
  if (port === undefined || port.kind !== 'port') throw new ConfigError(`There is no port ${portId}.`);
  const parsed = port.request.safeParse(data);
  if (!parsed.success) {
    throw new InvalidInputError(
      `The request for port ${portId} does not fit its schema: ${describeIssue(parsed.error).detail}.`,
    );
  }
  const expiresAt = timing.expiresAt ?? expiryAfter(new Date(at), port.ttlMs ?? timing.requestTtlMs);
  // An agent's call is waited on under its own row's id; a port request gets a new one.
  const id = timing.toolCall ?? newId('req');
  const request: PendingRequest = { id, port: portId, data, createdAt: at, askedBy, expiresAt };
  if (timing.toolCall !== undefined) request.toolCall = true;
  return request;
}
