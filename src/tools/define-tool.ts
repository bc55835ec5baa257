import type { z } from 'zod';
import type { ApprovalRequirement } from '../core/approval.ts';
import { type PolicyAnswer, requirementOf } from '../core/approval-requirement.ts';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import { parseTtl } from '../core/duration.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import type { JsonValue } from '../core/json.ts';
import { type NudgeOptions, type NudgeSchedule, nudgeSchedule } from '../core/nudges.ts';
import { storableText } from '../core/storable-text.ts';
import {
  type CompiledInputSchema,
  compileInputSchema,
  type InputCheck,
  type JsonSchemaObject,
  type ToolInputSchema,
} from './input-schema.ts';

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
  /** The model's id of this call ('auto' while an auto-approval rule is asked). */
  callId: string;
  agent: string;
  /** The signed-in customer or tenant the session belongs to; null when none was given. */
  principal: string | null;
  /** Stable per approved call: pass it to payment APIs and the like so a retry is a no-op. */
  idempotencyKey: string;
  /** The approval request id when the call was approved (by a person or a rule). */
  requestId: string | null;
  state: ToolState;
}

/**
 * Whether a call needs a person, and which: `true` one approver (of the tool's `role`, if
 * any), `false` none, or a requirement `{ role: 'manager', approvals: 2 }` — that many
 * distinct approvers holding the role. Run again on an edited call, so raising an amount
 * can ask for a higher role or a second approver.
 */
export type ApprovalPolicy<A> =
  | 'never'
  | 'always'
  | ApprovalRequirementInput
  | ((args: A, context: ToolContext) => PolicyAnswer | Promise<PolicyAnswer>);

/** A requirement as a policy writes it: a role, how many approvers (default 1). */
export type ApprovalRequirementInput = { role?: string | null; approvals?: number };

/** What a new customer message does to a waiting call: answer it "moved on", or keep it waiting. */
export type OnNewMessage = 'reject' | 'keep';

/** `true` allows; a string refuses and says why (the model reads it). */
export type AuthorizeResult = true | string;

/**
 * The arguments a tool receives after validation: zod's output type, a Standard Schema's
 * declared output, an AI SDK schema's type, or a plain object for a JSON Schema.
 */
export type InferToolArgs<S> = S extends z.ZodType
  ? z.output<S>
  : S extends { readonly '~standard': { readonly types?: infer T } }
    ? NonNullable<T> extends { readonly output: infer O }
      ? O
      : Record<string, unknown>
    : S extends { readonly _type: infer T }
      ? unknown extends T
        ? Record<string, unknown>
        : T
      : Record<string, unknown>;

/**
 * What countersign adds to a tool beyond its name, schema and function. `remindAfter`,
 * `escalateAfter` + `escalateTo` and `warnBefore` (NudgeOptions) nudge people while a call waits.
 */
export interface ApprovalOptions<A> extends NudgeOptions {
  /** Whether a person must approve a call. Defaults to 'always': asking is the safe default. */
  approval?: ApprovalPolicy<A>;
  /** What will happen, in words a support person understands. Shown next to the arguments. */
  effect?: (args: A, context: ToolContext) => string | Promise<string>;
  /** Checked before a person is asked and again right before the call runs. */
  authorize?: (args: A, context: ToolContext) => AuthorizeResult | Promise<AuthorizeResult>;
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
  /**
   * Argument fields a person may change before approving: names (`['quantity']`), or a zod
   * object whose keys are the fields and which checks their new values. The edited call is
   * validated by the input schema, authorized and routed by `approval` again.
   */
  editable?: readonly string[] | z.ZodObject;
  /** What a new customer message does to a waiting call of this tool; overrides the agent's. */
  onNewMessage?: OnNewMessage;
}

export interface ToolOptions<S extends ToolInputSchema, R extends JsonValue>
  extends ApprovalOptions<InferToolArgs<S>> {
  name: string;
  description: string;
  /** zod 4 or 3, any Standard Schema, `jsonSchema()` from "ai", or a plain JSON Schema. */
  input: S;
  execute: (args: InferToolArgs<S>, context: ToolContext) => R | Promise<R>;
}

export interface Tool {
  readonly name: string;
  readonly description: string;
  /** The input schema as it was given. */
  readonly inputSchema: ToolInputSchema;
  /** JSON Schema of the input, as sent to the model. */
  readonly jsonSchema: JsonSchemaObject;
  /** name + hash of schema and description: a different tool under the same name differs. */
  readonly identity: string;
  readonly approval: ApprovalPolicy<never>;
  readonly idempotent: boolean;
  readonly standing: boolean;
  readonly logged: boolean;
  readonly ttlMs: number | undefined;
  /** The role an approver must hold to decide a call; undefined when any approver may. */
  readonly role: string | undefined;
  /** Argument fields a person may edit; [] when none. */
  readonly editable: readonly string[];
  /** The tool's own onNewMessage; undefined: the agent's. */
  readonly onNewMessage: OnNewMessage | undefined;
  /** Who must approve this call, or null when no one need (the policy's answer, normalized). */
  requirement(args: unknown, context: ToolContext): Promise<ApprovalRequirement | null>;
  /**
   * Checks an edit's new values against the `editable` zod object, when one was given:
   * null when they fit, else what is wrong.
   */
  checkEdit(patch: Record<string, JsonValue>): string | null;
  /** When its waiting calls remind, escalate and warn before expiry; undefined when never. */
  readonly nudges: NudgeSchedule | undefined;
  effect(args: unknown, context: ToolContext): Promise<string>;
  authorize(args: unknown, context: ToolContext): Promise<AuthorizeResult>;
  needsApproval(args: unknown, context: ToolContext): Promise<boolean>;
  /** Validates the model's arguments against the input schema; never throws for bad input. */
  parseArgs(args: unknown): Promise<InputCheck>;
  execute(args: unknown, context: ToolContext): Promise<JsonValue>;
}

const toolNamePattern = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

export function defineTool<S extends ToolInputSchema, R extends JsonValue>(options: ToolOptions<S, R>): Tool {
  checkToolName(options.name);
  return buildTool({
    ...(options as ToolOptions<ToolInputSchema, JsonValue>),
    input: compileInputSchema(options.input, options.name),
    inputSchema: options.input,
  } as ToolSpec);
}

export function checkToolName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !toolNamePattern.test(name)) {
    throw new ConfigError(
      `Tool name "${String(name)}" must start with a letter and use letters, digits, _ or - (max 64).`,
    );
  }
}

/** A tool's parts after its schema was read; what defineTool and the AI SDK adapter share. */
export interface ToolSpec extends ApprovalOptions<never> {
  name: string;
  description: string;
  input: CompiledInputSchema;
  inputSchema: ToolInputSchema;
  execute: (args: never, context: ToolContext) => unknown;
}

/** Marks countersign tools so createAgent can tell them from AI SDK tool objects. */
export function isCountersignTool(value: unknown): value is Tool {
  const candidate = value as Partial<Tool> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.identity === 'string' &&
    typeof candidate.parseArgs === 'function' &&
    typeof candidate.execute === 'function'
  );
}

/** The field names `editable` declares: the list itself, or the zod object's keys. */
function editableFields(spec: ToolSpec): readonly string[] {
  const editable = spec.editable;
  if (editable === undefined) return [];
  const fields = Array.isArray(editable) ? [...editable] : Object.keys((editable as z.ZodObject).shape);
  const properties = spec.input.jsonSchema.properties;
  const known =
    typeof properties === 'object' && properties !== null
      ? (properties as Record<string, unknown>)
      : undefined;
  for (const field of fields) {
    if (typeof field !== 'string' || (known !== undefined && !(field in known))) {
      throw new ConfigError(
        `Tool ${spec.name} declares ${String(field)} editable, but its input has no such field.`,
        {
          hint: `Editable fields are top-level fields of the input schema: ${Object.keys(known ?? {}).join(', ')}.`,
        },
      );
    }
  }
  return fields;
}

export function buildTool(spec: ToolSpec): Tool {
  const { jsonSchema } = spec.input;
  const identity = `${spec.name}@${sha256Hex(canonicalJson({ d: spec.description, s: jsonSchema })).slice(0, 16)}`;
  const approval = (spec.approval ?? 'always') as ApprovalPolicy<unknown>;
  // The public type erases the argument type; the agent only calls these with parsed input.
  type Args = never;
  return {
    name: spec.name,
    description: spec.description,
    inputSchema: spec.inputSchema,
    jsonSchema,
    identity,
    approval: approval as ApprovalPolicy<never>,
    idempotent: spec.idempotent ?? false,
    standing: spec.standing ?? true,
    logged: spec.logged ?? false,
    ttlMs: spec.ttl === undefined ? undefined : parseTtl(spec.ttl, `ttl of tool ${spec.name}`),
    role: spec.role,
    nudges: nudgeSchedule(spec, `tool ${spec.name}`),
    async effect(args, context) {
      if (spec.effect) return storableText(await spec.effect(args as Args, context));
      return storableText(`Run ${spec.name} with ${canonicalJson(args)}.`);
    },
    async authorize(args, context) {
      return spec.authorize ? spec.authorize(args as Args, context) : true;
    },
    async needsApproval(args, context) {
      return (await this.requirement(args, context)) !== null;
    },
    editable: editableFields(spec),
    onNewMessage: spec.onNewMessage,
    async requirement(args, context) {
      const role = spec.role ?? null;
      if (approval === 'never') return null;
      if (approval === 'always') return { role, approvals: 1 };
      const answer = typeof approval === 'function' ? await approval(args, context) : approval;
      return requirementOf(answer, role, spec.name);
    },
    checkEdit(patch) {
      const schema = spec.editable;
      if (schema === undefined || Array.isArray(schema)) return null;
      const checked = (schema as z.ZodObject).partial().strict().safeParse(patch);
      if (checked.success) return null;
      return checked.error.issues
        .map((issue) => `${issue.path.join('.') || 'edit'}: ${issue.message}`)
        .join('; ');
    },
    parseArgs: (args) => spec.input.validate(args),
    async execute(args, context) {
      return (await spec.execute(args as Args, context)) as JsonValue;
    },
  };
}
