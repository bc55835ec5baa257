import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import { parseDuration } from '../core/duration.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import type { JsonValue } from '../core/json.ts';

/** Namespaced key/value state that lives in the same store as the sessions. */
export interface ToolState {
  get<T extends JsonValue = JsonValue>(key: string): Promise<T | undefined>;
  set(key: string, value: JsonValue): Promise<void>;
}

/**
 * What a tool knows about the call besides its arguments. The principal comes from the
 * session, never from the model, so authorization cannot be argued with.
 */
export interface ToolContext {
  session: string;
  agent: string;
  /** The signed-in customer or tenant the session belongs to; null when none was given. */
  principal: string | null;
  /** Stable per approved call: pass it to payment APIs and the like so a retry is a no-op. */
  idempotencyKey: string;
  /** The approval request id when the call was approved (by a person or a rule). */
  requestId: string | null;
  state: ToolState;
}

export type ApprovalPolicy<A> =
  | 'never'
  | 'always'
  | ((args: A, context: ToolContext) => boolean | Promise<boolean>);

/** `true` allows; a string refuses and says why (the model reads it). */
export type AuthorizeResult = true | string;

export interface ToolOptions<S extends z.ZodType, R extends JsonValue> {
  name: string;
  description: string;
  input: S;
  /** Whether a person must approve a call. Defaults to 'always': asking is the safe default. */
  approval?: ApprovalPolicy<z.output<S>>;
  /** What will happen, in words a support person understands. Shown next to the arguments. */
  effect?: (args: z.output<S>, context: ToolContext) => string | Promise<string>;
  /** Checked before a person is asked and again right before the call runs. */
  authorize?: (args: z.output<S>, context: ToolContext) => AuthorizeResult | Promise<AuthorizeResult>;
  /** Safe to run again with the same idempotency key after a crash left its outcome unknown. */
  idempotent?: boolean;
  /** Whether a person may approve this tool "always" for a session. Refunds say false. */
  standing?: boolean;
  /** Record every run of this tool in the audit trail even when no approval is needed. */
  logged?: boolean;
  /** How long a request for this tool waits for a decision (e.g. '15m'); overrides the agent's. */
  ttl?: string | number;
  /** The role an approver must hold to decide a call of this tool (e.g. 'manager' for refunds). */
  role?: string;
  execute: (args: z.output<S>, context: ToolContext) => R | Promise<R>;
}

export interface Tool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: z.ZodType;
  /** JSON Schema of the input, as sent to the model. */
  readonly jsonSchema: Record<string, unknown>;
  /** name + hash of schema and description: a different tool under the same name differs. */
  readonly identity: string;
  readonly approval: ApprovalPolicy<never>;
  readonly idempotent: boolean;
  readonly standing: boolean;
  readonly logged: boolean;
  readonly ttlMs: number | undefined;
  /** The role an approver must hold to decide a call; undefined when any approver may. */
  readonly role: string | undefined;
  effect(args: unknown, context: ToolContext): Promise<string>;
  authorize(args: unknown, context: ToolContext): Promise<AuthorizeResult>;
  needsApproval(args: unknown, context: ToolContext): Promise<boolean>;
  execute(args: unknown, context: ToolContext): Promise<JsonValue>;
}

const toolNamePattern = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

export function defineTool<S extends z.ZodType, R extends JsonValue>(options: ToolOptions<S, R>): Tool {
  if (!toolNamePattern.test(options.name)) {
    throw new ConfigError(
      `Tool name "${options.name}" must start with a letter and use letters, digits, _ or - (max 64).`,
    );
  }
  const jsonSchema = z.toJSONSchema(options.input, { target: 'draft-7', io: 'input' }) as Record<
    string,
    unknown
  >;
  delete jsonSchema.$schema;
  const identity = `${options.name}@${sha256Hex(canonicalJson({ d: options.description, s: jsonSchema })).slice(0, 16)}`;
  const approval = options.approval ?? 'always';
  // The public type erases the argument type; the agent only calls these with parsed input.
  type Args = z.output<S>;
  return {
    name: options.name,
    description: options.description,
    inputSchema: options.input,
    jsonSchema,
    identity,
    approval: approval as ApprovalPolicy<never>,
    idempotent: options.idempotent ?? false,
    standing: options.standing ?? true,
    logged: options.logged ?? false,
    ttlMs: options.ttl === undefined ? undefined : parseDuration(options.ttl, `ttl of tool ${options.name}`),
    role: options.role,
    async effect(args, context) {
      if (options.effect) return options.effect(args as Args, context);
      return `Run ${options.name} with ${canonicalJson(args)}.`;
    },
    async authorize(args, context) {
      return options.authorize ? options.authorize(args as Args, context) : true;
    },
    async needsApproval(args, context) {
      if (approval === 'never') return false;
      if (approval === 'always') return true;
      return approval(args as Args, context);
    },
    async execute(args, context) {
      return options.execute(args as Args, context);
    },
  };
}
