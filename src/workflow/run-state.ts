import { z } from 'zod';
import { CorruptDataError } from '../core/errors/corrupt-data-error.ts';
import type { JsonValue } from '../core/json.ts';
import { jsonValue } from '../core/json-schema.ts';
import type { RunStatus } from '../store/checkpoint-store.ts';
import type { WorkflowContract } from './define-workflow.ts';

/** A message waiting to be delivered in the next superstep. */
export interface PendingMessage {
  /** The sending executor or port; null for the run's input. */
  from: string | null;
  to: string;
  payload: JsonValue;
  /** Set when the message is an answer to a request. */
  answer?: {
    requestId: string;
    port: string;
    request: JsonValue;
    by: string;
    at: string;
    /** True when it goes back to the executor that asked (its onResponse). */
    reply: boolean;
    /** Set when the request expired without an answer (then `payload` is null; replies only). */
    expired?: boolean;
  };
}

/** Who started a run and for which customer: the parties of the port requests it raises (their rows hold them). */
export interface RunOrigin {
  /** The authenticated caller that started it (an API token's name, the CLI's --as); null when not recorded. */
  by: string | null;
  /** The customer the run acts for; null when none was given. */
  customer: string | null;
}

export interface PendingRequest {
  id: string;
  port: string;
  data: JsonValue;
  createdAt: string;
  /** The executor that asked with ctx.request; null when a message reached the port along an edge. */
  askedBy: string | null;
  /**
   * When the request stops taking answers. Null only for requests in checkpoints written
   * before requests expired: those never expire.
   */
  expiresAt: string | null;
  /**
   * True when this is an agent's tool call (an agentExecutor's): `id` is the call's own row
   * in the agents' store, decided with `agent.decide`, and no port row is raised for it.
   * Otherwise the request is a port request whose row (same id) the checkpoint raised.
   */
  toolCall?: true;
}

/**
 * A request reached along an edge that expired without an answer: nothing was sent on from
 * its port, so the branch waiting on it ended there.
 */
export interface ExpiredRequest {
  requestId: string;
  port: string;
  expiresAt: string;
  /** When the expiry was recorded. */
  at: string;
}

export interface RunError {
  code: string;
  message: string;
  executor: string | null;
}

/**
 * Everything a run needs to continue, and nothing it does not: no history. Its size follows
 * what is in flight, never how long the run has been going.
 */
export interface WorkflowRunState {
  messages: PendingMessage[];
  requests: PendingRequest[];
  /** Fan-in edge id → source id → messages that arrived before every source had sent one. */
  fanIn: Record<string, Record<string, JsonValue[]>>;
  /** Executor id → its own state. */
  executors: Record<string, JsonValue>;
  outputs: JsonValue[];
  /** Branches that ended because their request expired (so far; like outputs). */
  expired: ExpiredRequest[];
  error: RunError | null;
  /** Who started the run, for whom: never changes once the run starts. */
  origin: RunOrigin;
}

export const CHECKPOINT_FORMAT = 1;

export interface CheckpointBody {
  format: typeof CHECKPOINT_FORMAT;
  contract: WorkflowContract;
  state: WorkflowRunState;
}

export function emptyRunState(): WorkflowRunState {
  return {
    messages: [],
    requests: [],
    fanIn: {},
    executors: {},
    outputs: [],
    expired: [],
    error: null,
    origin: { by: null, customer: null },
  };
}

export function statusOf(state: WorkflowRunState): RunStatus {
  if (state.error !== null) return 'failed';
  if (state.messages.length > 0) return 'running';
  if (state.requests.length > 0) return 'awaiting_input';
  if (state.expired.length > 0) return 'expired';
  return 'completed';
}

const bodySchema = z.object({
  format: z.literal(CHECKPOINT_FORMAT),
  contract: z.object({
    nodes: z.record(
      z.string(),
      z.object({ kind: z.enum(['executor', 'port']), schemas: z.record(z.string(), z.string()) }),
    ),
  }),
  state: z.object({
    messages: z.array(
      z.object({
        from: z.string().nullable(),
        to: z.string(),
        payload: jsonValue,
        answer: z
          .object({
            requestId: z.string(),
            port: z.string(),
            request: jsonValue,
            by: z.string(),
            at: z.string(),
            reply: z.boolean(),
            expired: z.boolean().optional(),
          })
          .optional(),
      }),
    ),
    requests: z.array(
      z.object({
        id: z.string(),
        port: z.string(),
        data: jsonValue,
        createdAt: z.string(),
        askedBy: z.string().nullable(),
        // Added to format 1 later: older checkpoints have none, and their requests never expire.
        expiresAt: z.string().nullable().default(null),
        // Added to format 1 later, like `expiresAt`. (Checkpoints written before requests were
        // rows may carry `parties`; the rows adopted from them hold those now.)
        toolCall: z.literal(true).optional(),
      }),
    ),
    fanIn: z.record(z.string(), z.record(z.string(), z.array(jsonValue))),
    executors: z.record(z.string(), jsonValue),
    outputs: z.array(jsonValue),
    // Added to format 1 later, like `expiresAt`.
    expired: z
      .array(z.object({ requestId: z.string(), port: z.string(), expiresAt: z.string(), at: z.string() }))
      .default([]),
    error: z.object({ code: z.string(), message: z.string(), executor: z.string().nullable() }).nullable(),
    // Added to format 1 later: runs started before it have no recorded origin.
    origin: z
      .object({ by: z.string().nullable(), customer: z.string().nullable() })
      .default({ by: null, customer: null }),
  }),
});

/** Reads a stored body; anything else than what this code writes is reported, not guessed at. */
export function decodeCheckpointBody(body: JsonValue, where: string): CheckpointBody {
  const parsed = bodySchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CorruptDataError(
      `${where} is not a countersign checkpoint of format ${CHECKPOINT_FORMAT}` +
        (issue ? ` (at ${issue.path.map(String).join('.') || 'the top'}: ${issue.message})` : '') +
        '.',
      { hint: 'It was written by other software or edited by hand; nothing was changed.' },
    );
  }
  return parsed.data as CheckpointBody;
}
