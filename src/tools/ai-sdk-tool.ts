import { ConfigError } from '../core/errors/config-error.ts';
import type { JsonValue } from '../core/json.ts';
import {
  type ApprovalOptions,
  type ApprovalPolicy,
  buildTool,
  checkToolName,
  type Tool,
} from './define-tool.ts';
import { compileInputSchema } from './input-schema.ts';

/**
 * The parts of an AI SDK `tool({...})` (ai v5 to v7) countersign reads, written structurally
 * so `ai` stays a devDependency: any object with an `inputSchema` and an `execute` fits.
 */
export interface AiSdkToolLike {
  readonly inputSchema?: unknown;
  readonly description?: unknown;
  readonly needsApproval?: unknown;
  readonly execute?: unknown;
  readonly type?: unknown;
}

/** countersign's options on an AI SDK tool, kept under a symbol so `ai` never sees them. */
export interface AiSdkApprovalOptions<A = never> extends Omit<ApprovalOptions<A>, 'approval'> {
  /** The tool's name when tools are given as an array (a record's key names it otherwise). */
  name?: string;
  /** Overrides the tool's own `needsApproval`. */
  approval?: ApprovalPolicy<A>;
}

const optionsKey = Symbol.for('countersign.approvalOptions');

type WithOptions = { [optionsKey]?: AiSdkApprovalOptions<unknown> };

type ArgsOf<T> = T extends { execute?: (input: infer I, ...rest: never[]) => unknown } ? I : never;

/**
 * Adds countersign's options to an AI SDK tool without changing it for the AI SDK: the
 * result is the same tool (a shallow copy) and still works with generateText/streamText.
 * A wrapper rather than extra fields because `tool({...})` rejects unknown fields at compile
 * time, and because a future `ai` field of the same name could not then change meaning.
 */
export function withApproval<T extends AiSdkToolLike>(
  aiTool: T,
  options: AiSdkApprovalOptions<ArgsOf<T>>,
): T {
  return { ...aiTool, [optionsKey]: options } as T;
}

export function isAiSdkTool(value: unknown): value is AiSdkToolLike {
  return typeof value === 'object' && value !== null && 'inputSchema' in value;
}

/** Builds a countersign tool from an AI SDK tool; `key` is its record key, if any. */
export function fromAiSdkTool(aiTool: AiSdkToolLike, key: string | undefined, where: string): Tool {
  const extra = (aiTool as WithOptions)[optionsKey] ?? {};
  const name = extra.name ?? key;
  if (name === undefined) {
    throw new ConfigError(`${where} is an AI SDK tool without a name.`, {
      hint: 'Pass tools as a record ({ cancel_order: tool({...}) }) or name it: withApproval(tool({...}), { name: "cancel_order" }).',
    });
  }
  checkToolName(name);
  if (aiTool.type === 'provider') {
    throw new ConfigError(
      `Tool ${name} is a provider tool: the provider runs it, so no person could approve it first.`,
      {
        hint: 'Give the agent only tools with an execute function.',
      },
    );
  }
  const execute = aiTool.execute;
  if (typeof execute !== 'function') {
    throw new ConfigError(`Tool ${name} has no execute function.`, {
      hint: 'countersign runs approved calls itself: add execute to the tool({...}) definition.',
    });
  }
  if (aiTool.description !== undefined && typeof aiTool.description !== 'string') {
    throw new ConfigError(`Tool ${name} has a description that is not a string.`, {
      hint: 'Approvers read the description next to each request: give a fixed string.',
    });
  }
  const run = execute as (input: unknown, options: unknown) => unknown;
  return buildTool({
    ...(extra as AiSdkApprovalOptions<never>),
    name,
    description: aiTool.description ?? '',
    approval: (extra.approval ?? approvalOf(aiTool.needsApproval, name)) as ApprovalPolicy<never>,
    input: compileInputSchema(aiTool.inputSchema, name),
    inputSchema: aiTool.inputSchema as never,
    async execute(args, context) {
      // Whatever it returns is made plain JSON where the call is recorded (tool-output.ts).
      return (await lastValue(
        run(args, { toolCallId: context.callId, messages: [], context: {}, abortSignal: undefined }),
      )) as JsonValue;
    },
  });
}

/**
 * `needsApproval: true | false | (input, options) => boolean` becomes countersign's policy.
 * Left out, a call waits for a person: countersign's default is the safe one, not the AI SDK's.
 */
function approvalOf(needsApproval: unknown, name: string): ApprovalPolicy<unknown> {
  if (needsApproval === undefined || needsApproval === true) return 'always';
  if (needsApproval === false) return 'never';
  if (typeof needsApproval === 'function') {
    const decide = needsApproval as (input: unknown, options: unknown) => unknown;
    return async (args, context) =>
      Boolean(await decide(args, { toolCallId: context.callId, messages: [], context: {} }));
  }
  throw new ConfigError(`Tool ${name} has a needsApproval that is neither a boolean nor a function.`);
}

/** AI SDK tools may stream their output as an async iterable; the last value is the result. */
async function lastValue(output: unknown): Promise<unknown> {
  const awaited = await output;
  if (typeof awaited !== 'object' || awaited === null || !(Symbol.asyncIterator in awaited)) return awaited;
  let last: unknown;
  for await (const value of awaited as AsyncIterable<unknown>) last = value;
  return last;
}
