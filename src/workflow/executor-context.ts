import type { Agent } from '../agent/create-agent.ts';
import type { JsonValue } from '../core/json.ts';
import type { ClaimResult } from '../store/checkpoint-store.ts';
import type { RequestPort } from './request-port.ts';
import type { RunOrigin } from './run-state.ts';

/**
 * Application state executors share with the rest of the app (for the bookstore, the same
 * namespace its tools use). `claim` stores a value only if the key is absent, atomically
 * across processes: the building block of "the same refund is never issued twice".
 */
export interface WorkflowState {
  get<T extends JsonValue = JsonValue>(key: string): Promise<T | undefined>;
  set(key: string, value: JsonValue): Promise<void>;
  claim(key: string, value: JsonValue): Promise<ClaimResult>;
}

/** Where a message delivered to an executor came from when it is the answer to a request. */
export interface AnsweredRequest {
  requestId: string;
  port: string;
  /** The request's data, as it was shown to whoever answered. */
  request: JsonValue;
  by: string;
  at: string;
  /**
   * True when the request expired without an answer: `by` is `countersign`, and the
   * response (in `onResponse`) is null. Only an executor that asked with `ctx.request` ever
   * sees one; a request reached along an edge that expires sends nothing on.
   */
  expired: boolean;
}

/** Options of `ctx.request`. */
export interface RequestOptions {
  /**
   * When the request stops taking answers (ISO-8601 text with its zone, or a Date), instead
   * of now + the port's TTL: for a request that stands for something with an expiry of its
   * own, such as an agent's call. Stored in UTC.
   */
  expiresAt?: string | Date;
  /**
   * The id of an agent's tool-call row this request is (agentExecutor): the run waits on that
   * row itself, decided with `agent.decide` (its raiser, customer and role as the row holds
   * them), and no second request is raised.
   */
  toolCall?: string;
}

export interface ExecutorContext<S = never> {
  readonly run: string;
  readonly workflow: string;
  readonly executor: string;
  readonly superstep: number;
  /**
   * The same when this delivery is run again from the same checkpoint (after a crash or a
   * lost race), different on another branch: hand it to payment APIs and the like.
   */
  readonly idempotencyKey: string;
  readonly state: WorkflowState;
  /** Who started the run and for which customer. */
  readonly origin: RunOrigin;
  /** Set when the message is the answer to a request (it arrived through a request port). */
  readonly answered: AnsweredRequest | null;
  /** This executor's own state in the run, as kept in the checkpoint. */
  getState(): S | undefined;
  setState(value: S): void;
  /** Sends a message along this executor's edges, delivered in the next superstep. */
  send(message: JsonValue): void;
  /** Adds a workflow output. */
  output(value: JsonValue): void;
  /** Asks the outside on one of this executor's own ports; the answer comes to `onResponse`. */
  request<Req>(port: RequestPort<Req, unknown>, data: Req, options?: RequestOptions): void;
  /** The agent bound to the run's store and model. */
  agent(agent: Agent): Promise<Agent>;
}
