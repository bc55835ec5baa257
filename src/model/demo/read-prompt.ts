import type { LanguageModelV4Prompt, LanguageModelV4ToolResultOutput } from '@ai-sdk/provider';
import type { JsonObject, JsonValue } from '../../core/json.ts';

export interface PromptCall {
  id: string;
  tool: string;
  args: JsonObject;
}

export interface PromptResult {
  callId: string;
  tool: string;
  output: JsonValue;
  /** The prompt itself marked this as an error (error-text, error-json, execution-denied). */
  flaggedError: boolean;
  /** The call this answers, when the prompt still holds it. */
  call: PromptCall | undefined;
}

/** The few facts the demo model acts on, read from a prompt of any origin. */
export interface PromptView {
  last: 'user' | 'tool' | 'other';
  /** Text of the most recent user message, wherever it is. */
  userText: string;
  /** Results after the most recent assistant message, when the prompt ends with them. */
  results: PromptResult[];
  /** Every call the assistant made so far, oldest first. */
  calls: PromptCall[];
}

export function readPrompt(prompt: LanguageModelV4Prompt): PromptView {
  const calls: PromptCall[] = [];
  let userText = '';
  let trailing: Array<Omit<PromptResult, 'call'>> = [];
  for (const message of prompt) {
    if (message.role === 'user') {
      userText = message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
      trailing = [];
    } else if (message.role === 'assistant') {
      trailing = [];
      for (const part of message.content) {
        if (part.type === 'tool-call')
          calls.push({ id: part.toolCallId, tool: part.toolName, args: toArgs(part.input) });
      }
    } else if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type !== 'tool-result') continue;
        trailing.push({ callId: part.toolCallId, tool: part.toolName, ...readOutput(part.output) });
      }
    }
  }
  const role = prompt.at(-1)?.role;
  const byId = new Map(calls.map((call) => [call.id, call]));
  return {
    last: role === 'user' ? 'user' : role === 'tool' ? 'tool' : 'other',
    userText,
    results: role === 'tool' ? trailing.map((result) => ({ ...result, call: byId.get(result.callId) })) : [],
    calls,
  };
}

function readOutput(output: LanguageModelV4ToolResultOutput): { output: JsonValue; flaggedError: boolean } {
  switch (output.type) {
    case 'text':
      return { output: output.value, flaggedError: false };
    case 'json':
      return { output: fromJson(output.value), flaggedError: false };
    case 'error-text':
      return { output: output.value, flaggedError: true };
    case 'error-json':
      return { output: fromJson(output.value), flaggedError: true };
    case 'execution-denied':
      return { output: output.reason ?? 'The call was denied.', flaggedError: true };
    case 'content':
      return {
        output: output.value.map((part) => (part.type === 'text' ? part.text : '')).join(''),
        flaggedError: false,
      };
  }
}

/** Tool-call input is "JSON-serializable" in the prompt, but some callers pass the JSON text. */
function toArgs(input: unknown): JsonObject {
  let value = input;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return {};
    }
  }
  return isObject(value) ? (value as JsonObject) : {};
}

/** The provider's JSONValue is the readonly twin of ours; the demo never mutates it. */
function fromJson(value: unknown): JsonValue {
  return (value ?? null) as JsonValue;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
