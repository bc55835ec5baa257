import type { z } from 'zod';
import { parseTtl } from '../core/duration.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { type NudgeOptions, type NudgeSchedule, nudgeSchedule } from '../core/nudges.ts';
import { defaultPortEffect } from '../core/port-effect.ts';
import { storableText } from '../core/storable-text.ts';
import type { AnsweredRequest } from './executor-context.ts';
import { describeIssue } from './schema-hash.ts';
import { nodeIdPattern, type WorkflowNode } from './workflow-node.ts';

/**
 * A point where the run stops and asks the outside. A message reaching the port becomes a
 * request (`request` schema); the answer (`response` schema) travels on along the port's
 * edges in the next superstep. A request takes answers until its `expiresAt` (now + `ttl`).
 */
export interface RequestPort<Req, Res> extends WorkflowNode<Req, Res> {
  readonly kind: 'port';
  readonly request: z.ZodType<Req>;
  readonly response: z.ZodType<Res>;
  /** The role an approver needs to answer this port's requests (e.g. refunds: 'manager'). */
  readonly role: string | undefined;
  /** When its waiting requests remind, escalate and warn before expiry; undefined when never. */
  readonly nudges: NudgeSchedule | undefined;
  /**
   * How many distinct people must approve an approval-shaped answer (`{approved: true, …}`)
   * before it is recorded (a quorum); 1 by default. Any `approved: false` vetoes at once.
   */
  readonly approvals: number;
  /**
   * How long its requests take answers, in ms; undefined: the runner's `requestTtl`
   * (default COUNTERSIGN_APPROVAL_TTL, else 24h).
   */
  readonly ttlMs: number | undefined;
  /**
   * What answering a request does, in words for the person asked (the inbox and the CLI show
   * it, like a tool's effect): the port's `effect`, else a sentence naming the port and the
   * workflow. Computed once, when the request is raised, and stored with it.
   */
  effectOf(data: Req, context: PortEffectContext): string;
  /** The request an answer belongs to, typed: for executors downstream of the port. */
  requestOf(context: { readonly answered: AnsweredRequest | null }): Req;
}

/** What a port's `effect` function is told about the request's run. */
export interface PortEffectContext {
  run: string;
  workflow: string;
  /** The customer the run acts for; null when none was given. */
  customer: string | null;
}

export function requestPort<Req, Res>(
  id: string,
  schemas: NudgeOptions & {
    request: z.ZodType<Req>;
    response: z.ZodType<Res>;
    role?: string;
    /** Distinct approvers an approval-shaped answer needs (1 to 10; default 1): a quorum. */
    approvals?: number;
    /** How long a request takes answers: '15m', '24h', '7d' or ms (default: the runner's). */
    ttl?: string | number;
    /**
     * What answering does, in plain language: a sentence, or one built from the request's
     * data ("Refund 35.00 on order 1040 to customer c-100"). Default: names the port and the workflow.
     */
    effect?: string | ((data: Req, context: PortEffectContext) => string);
  },
): RequestPort<Req, Res> {
  if (!nodeIdPattern.test(id)) {
    throw new ConfigError(
      `Request port id "${id}" must start with a letter and use letters, digits, . _ - (max 64).`,
    );
  }
  const ttlMs = schemas.ttl === undefined ? undefined : parseTtl(schemas.ttl, `ttl of port ${id}`);
  const approvals = schemas.approvals ?? 1;
  if (!Number.isInteger(approvals) || approvals < 1 || approvals > 10) {
    throw new ConfigError(
      `Port ${id} asks for ${String(schemas.approvals)} approvals; it must be a whole number from 1 to 10.`,
    );
  }
  return {
    id,
    kind: 'port',
    request: schemas.request,
    response: schemas.response,
    role: schemas.role,
    nudges: nudgeSchedule(schemas, `port ${id}`),
    approvals,
    ttlMs,
    effectOf(data, context) {
      const { effect } = schemas;
      if (typeof effect === 'string') return storableText(effect);
      if (effect !== undefined) return storableText(effect(data, context));
      return defaultPortEffect(id, context.workflow, context.run);
    },
    requestOf(context) {
      const answered = context.answered;
      if (answered === null || answered.port !== id) {
        throw new InvalidInputError(`This message is not an answer from port ${id}.`);
      }
      const parsed = schemas.request.safeParse(answered.request);
      if (!parsed.success) {
        throw new InvalidInputError(
          `The request ${answered.requestId} on port ${id} does not fit its schema: ${describeIssue(parsed.error).detail}.`,
        );
      }
      return parsed.data;
    },
  };
}
