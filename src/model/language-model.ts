import type {
  LanguageModelV3,
  LanguageModelV3GenerateResult,
  LanguageModelV4,
  LanguageModelV4GenerateResult,
} from '@ai-sdk/provider';
import type { JsonValue } from '../core/json.ts';

/**
 * Every model the agent can drive. The agent calls `doGenerate` itself, so a v3 model from
 * an older provider package works as long as the prompt only uses what both versions share.
 */
export type AnyLanguageModel = LanguageModelV4 | LanguageModelV3;

export type AnyGenerateResult = LanguageModelV4GenerateResult | LanguageModelV3GenerateResult;

/*
 * The prompt subset countersign produces. It is written out rather than taken from
 * LanguageModelV4Prompt because the full v4 prompt is not assignable to v3's (file parts,
 * custom and reasoning-file parts differ), which would make `doGenerate` on
 * AnyLanguageModel need a cast. This subset is assignable to both versions' prompts.
 */

export type ModelTextPart = { type: 'text'; text: string };

export type ModelToolCallPart = { type: 'tool-call'; toolCallId: string; toolName: string; input: JsonValue };

export type ModelToolResultOutput = { type: 'text'; value: string } | { type: 'json'; value: JsonValue };

export type ModelToolResultPart = {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: ModelToolResultOutput;
};

export type ModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: ModelTextPart[] }
  | { role: 'assistant'; content: Array<ModelTextPart | ModelToolCallPart> }
  | { role: 'tool'; content: ModelToolResultPart[] };

export type ModelPrompt = ModelMessage[];
