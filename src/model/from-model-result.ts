import type { LanguageModelV3Content, LanguageModelV4Content } from '@ai-sdk/provider';
import type { JsonValue } from '../core/json.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeepMessage } from '../core/json-depth.ts';
import type { ToolCall } from '../core/messages.ts';

/** A call whose arguments were not JSON at all; the agent answers it with a tool error. */
export interface InvalidToolCall {
  id: string;
  tool: string;
  raw: string;
  error: string;
}

export interface ModelTurn {
  text: string;
  calls: ToolCall[];
  invalid: InvalidToolCall[];
}

/**
 * What the agent needs from one model response. Provider-executed calls, reasoning, files
 * and sources are dropped: countersign only runs the calls it was asked to run.
 */
export function fromModelResult(result: {
  content: ReadonlyArray<LanguageModelV4Content | LanguageModelV3Content>;
}): ModelTurn {
  let text = '';
  const calls: ToolCall[] = [];
  const invalid: InvalidToolCall[] = [];
  for (const part of result.content) {
    if (part.type === 'text') {
      text += part.text;
    } else if (part.type === 'tool-call' && !part.providerExecuted) {
      const parsed = parseInput(part.input);
      if (parsed.ok) calls.push({ id: part.toolCallId, tool: part.toolName, args: parsed.value });
      else invalid.push({ id: part.toolCallId, tool: part.toolName, raw: part.input, error: parsed.error });
    }
  }
  return { text, calls, invalid };
}

function parseInput(input: string): { ok: true; value: JsonValue } | { ok: false; error: string } {
  // Providers send "" for a call without arguments; the AI SDK reads that as {} too.
  if (input.trim() === '') return { ok: true, value: {} };
  let value: JsonValue;
  try {
    value = JSON.parse(input) as JsonValue;
  } catch (error) {
    return { ok: false, error: `The arguments are not valid JSON: ${(error as Error).message}` };
  }
  // A model's arguments are JSON from outside like any other: held to the same depth.
  if (nestsDeeperThan(value, MAX_JSON_DEPTH)) return { ok: false, error: tooDeepMessage('The arguments') };
  return { ok: true, value };
}
