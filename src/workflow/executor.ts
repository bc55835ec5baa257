import type { z } from 'zod';
import { ConfigError } from '../core/errors/config-error.ts';
import type { JsonValue } from '../core/json.ts';
import type { AnsweredRequest, ExecutorContext } from './executor-context.ts';
import { nodeIdPattern, type WorkflowNode } from './workflow-node.ts';

type MaybePromise<T> = T | Promise<T>;

/** A port of any request and response type, as an executor lists the ports it asks on. */
export interface AnyRequestPort {
  readonly id: string;
  readonly kind: 'port';
  readonly request: z.ZodType;
  readonly response: z.ZodType;
}

/**
 * The answer to a request an executor raised itself with `ctx.request`. When the request
 * expired without an answer, `expired` is true, `by` is `countersign` and `response` is null.
 */
export interface ExecutorAnswer extends AnsweredRequest {
  response: JsonValue;
}

export interface ExecutorOptions<I, O, S> {
  /** Stable: checkpoints name executors by id, so renaming one is an incompatible change. */
  id: string;
  /** Schema of the messages it accepts; checked on delivery and hashed into the contract. */
  input: z.ZodType<I>;
  /** Schema of the messages it sends; checked before they leave. */
  output?: z.ZodType<O>;
  /** Schema of its own state kept in the checkpoint (`ctx.getState` / `ctx.setState`). */
  state?: z.ZodType<S>;
  /** Ports it asks on with `ctx.request`; their answers come back to `onResponse`. */
  ports?: readonly AnyRequestPort[];
  /** Handles one message. A returned value is sent along its edges (and is an output, if marked). */
  handle: (input: I, ctx: ExecutorContext<S>) => MaybePromise<O | undefined>;
  onResponse?: (answer: ExecutorAnswer, ctx: ExecutorContext<S>) => MaybePromise<O | undefined>;
}

export interface Executor<I, O, S = never> extends WorkflowNode<I, O> {
  readonly kind: 'executor';
  readonly input: z.ZodType<I>;
  readonly output: z.ZodType<O> | undefined;
  readonly state: z.ZodType<S> | undefined;
  readonly ports: readonly AnyRequestPort[];
  handle(input: I, ctx: ExecutorContext<S>): Promise<O | undefined>;
  onResponse(answer: ExecutorAnswer, ctx: ExecutorContext<S>): Promise<O | undefined>;
}

/** A typed function with a stable string id: one node of a workflow. */
export function executor<I, O = never, S = never>(options: ExecutorOptions<I, O, S>): Executor<I, O, S> {
  if (!nodeIdPattern.test(options.id)) {
    throw new ConfigError(
      `Executor id "${options.id}" must start with a letter and use letters, digits, . _ - (max 64).`,
    );
  }
  const ports = options.ports ?? [];
  return {
    id: options.id,
    kind: 'executor',
    input: options.input,
    output: options.output,
    state: options.state,
    ports,
    async handle(input, ctx) {
      return options.handle(input, ctx);
    },
    async onResponse(answer, ctx) {
      if (options.onResponse === undefined) {
        throw new ConfigError(`Executor ${options.id} asked on port ${answer.port} but has no onResponse.`);
      }
      return options.onResponse(answer, ctx);
    },
  };
}
