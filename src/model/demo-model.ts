import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
} from '@ai-sdk/provider';
import { readPrompt } from './demo/read-prompt.ts';
import { type DemoReply, respond } from './demo/respond.ts';

export const DEMO_PROVIDER = 'countersign';
export const DEMO_MODEL_ID = 'demo';

/**
 * A stand-in model for trying countersign without an API key: offline, instant and
 * deterministic, it plays a small support agent for the bookstore and kitchen examples, and
 * calls any offered tool by name ("use add_note with text hello"), its arguments read by the
 * tool's JSON Schema.
 */
export function createDemoModel(): LanguageModelV4 {
  return {
    specificationVersion: 'v4',
    provider: DEMO_PROVIDER,
    modelId: DEMO_MODEL_ID,
    supportedUrls: {},
    async doGenerate(options) {
      return generate(options);
    },
    async doStream(options) {
      const result = generate(options);
      return { stream: toStream(result) };
    },
  };
}

function generate(options: LanguageModelV4CallOptions): LanguageModelV4GenerateResult {
  const schemas = new Map<string, unknown>();
  if (options.toolChoice?.type !== 'none') {
    for (const tool of options.tools ?? [])
      if (tool.type === 'function') schemas.set(tool.name, tool.inputSchema);
  }
  const view = readPrompt(options.prompt);
  const reply = respond(view, new Set(schemas.keys()), schemas);
  const content = toContent(reply, view.calls.length);
  return {
    content,
    finishReason:
      reply.calls.length > 0
        ? { unified: 'tool-calls', raw: 'tool_calls' }
        : { unified: 'stop', raw: 'stop' },
    usage: usage(JSON.stringify(options.prompt), JSON.stringify(content)),
    response: { modelId: DEMO_MODEL_ID },
    warnings: [],
  };
}

/** Call ids count on from the calls already in the prompt, so they never repeat in a session. */
function toContent(reply: DemoReply, earlierCalls: number): LanguageModelV4Content[] {
  const content: LanguageModelV4Content[] = [];
  if (reply.text) content.push({ type: 'text', text: reply.text });
  reply.calls.forEach((call, index) => {
    content.push({
      type: 'tool-call',
      toolCallId: `call_${earlierCalls + index + 1}`,
      toolName: call.tool,
      input: JSON.stringify(call.args),
    });
  });
  return content;
}

/** A rough, stable count (about four characters a token) so usage displays look plausible. */
function usage(input: string, output: string): LanguageModelV4Usage {
  const inputTokens = Math.ceil(input.length / 4);
  const outputTokens = Math.ceil(output.length / 4);
  return {
    inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: outputTokens, text: outputTokens, reasoning: undefined },
  };
}

function toStream(result: LanguageModelV4GenerateResult): ReadableStream<LanguageModelV4StreamPart> {
  const parts: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }];
  for (const part of result.content) {
    if (part.type === 'text') {
      parts.push({ type: 'text-start', id: 'text-1' });
      // Word by word, so a streaming caller sees the reply arrive as from a real model.
      for (const delta of part.text.match(/\S+\s*|\s+/g) ?? [])
        parts.push({ type: 'text-delta', id: 'text-1', delta });
      parts.push({ type: 'text-end', id: 'text-1' });
    } else if (part.type === 'tool-call') {
      parts.push({ type: 'tool-input-start', id: part.toolCallId, toolName: part.toolName });
      parts.push({ type: 'tool-input-delta', id: part.toolCallId, delta: part.input });
      parts.push({ type: 'tool-input-end', id: part.toolCallId }, part);
    }
  }
  parts.push({ type: 'finish', usage: result.usage, finishReason: result.finishReason });
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}
