import type {
  JSONValue,
  LanguageModelV4CallOptions,
  LanguageModelV4FunctionTool,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ToolResultPart,
} from '@ai-sdk/provider';

/** The parts of an OpenAI Chat Completions request that the scripted server reads. */
export interface ChatCompletionsRequestBody {
  model: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  tool_choice?: unknown;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

type TextContent = string | null | undefined | Array<{ type: string; text?: string }>;

export type ChatMessage =
  | { role: 'system'; content: TextContent }
  | { role: 'developer'; content: TextContent }
  | { role: 'user'; content: TextContent }
  | { role: 'assistant'; content?: TextContent; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: TextContent };

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** What a handler answers: an assistant turn, or an HTTP failure. */
export type ScriptedReply =
  | { text?: string; toolCalls?: Array<{ id?: string; name: string; arguments: string }> }
  | { status: number; body?: unknown };

/**
 * The request as LanguageModelV4 call options, so a V4 model (the demo) can answer it.
 * Tool messages carry no error flag and no type on the wire: JSON objects and arrays come
 * back as json output, anything else as text.
 */
export function toCallOptions(body: ChatCompletionsRequestBody): LanguageModelV4CallOptions {
  const prompt: LanguageModelV4Prompt = [];
  const toolNames = new Map<string, string>();
  for (const message of body.messages) {
    if (message.role === 'system' || message.role === 'developer') {
      prompt.push({ role: 'system', content: textOf(message.content) });
    } else if (message.role === 'user') {
      prompt.push({ role: 'user', content: [{ type: 'text', text: textOf(message.content) }] });
    } else if (message.role === 'assistant') {
      const content: Extract<LanguageModelV4Message, { role: 'assistant' }>['content'] = [];
      const text = textOf(message.content);
      if (text) content.push({ type: 'text', text });
      for (const call of message.tool_calls ?? []) {
        toolNames.set(call.id, call.function.name);
        content.push({
          type: 'tool-call',
          toolCallId: call.id,
          toolName: call.function.name,
          input: parseOr(call.function.arguments, call.function.arguments),
        });
      }
      prompt.push({ role: 'assistant', content });
    } else {
      const part: LanguageModelV4ToolResultPart = {
        type: 'tool-result',
        toolCallId: message.tool_call_id,
        toolName: toolNames.get(message.tool_call_id) ?? 'unknown',
        output: toOutput(textOf(message.content)),
      };
      const last = prompt.at(-1);
      if (last?.role === 'tool') last.content.push(part);
      else prompt.push({ role: 'tool', content: [part] });
    }
  }
  const tools: LanguageModelV4FunctionTool[] = (body.tools ?? []).map((tool) => ({
    type: 'function',
    name: tool.function.name,
    ...(tool.function.description === undefined ? {} : { description: tool.function.description }),
    inputSchema: tool.function.parameters ?? { type: 'object' },
  }));
  return { prompt, tools, ...(body.tool_choice === 'none' ? { toolChoice: { type: 'none' } } : {}) };
}

function textOf(content: TextContent): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? (part.text ?? '') : '')).join('');
}

function toOutput(text: string): LanguageModelV4ToolResultPart['output'] {
  const value: unknown = parseOr(text, undefined);
  return typeof value === 'object' && value !== null
    ? { type: 'json', value: value as JSONValue }
    : { type: 'text', value: text };
}

function parseOr(text: string, fallback: unknown): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}
