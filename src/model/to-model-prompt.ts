import type { Message, ToolResult } from '../core/messages.ts';
import type { ModelMessage, ModelPrompt, ModelToolResultOutput } from './language-model.ts';

/**
 * The whole history as a model prompt. The result is assignable to both
 * LanguageModelV4Prompt and LanguageModelV3Prompt.
 */
export function toModelPrompt(instructions: string, messages: Message[]): ModelPrompt {
  const prompt: ModelPrompt = [];
  if (instructions) prompt.push({ role: 'system', content: instructions });
  for (const message of messages) prompt.push(toModelMessage(message));
  return prompt;
}

/** One message, independent of its neighbours, so a running prompt can be extended in place. */
export function toModelMessage(message: Message): ModelMessage {
  switch (message.role) {
    case 'user':
      return { role: 'user', content: [{ type: 'text', text: message.text }] };
    case 'assistant': {
      const content: Extract<ModelMessage, { role: 'assistant' }>['content'] = [];
      if (message.text) content.push({ type: 'text', text: message.text });
      for (const call of message.calls ?? []) {
        content.push({ type: 'tool-call', toolCallId: call.id, toolName: call.tool, input: call.args });
      }
      return { role: 'assistant', content };
    }
    case 'tool':
      return {
        role: 'tool',
        content: message.results.map((result) => ({
          type: 'tool-result',
          toolCallId: result.callId,
          toolName: result.tool,
          output: toModelOutput(result),
        })),
      };
  }
}

/**
 * Errors go out as plain text/json, not error-text/error-json: the output already says
 * that nothing was done and why, and one form keeps what the model reads the same on
 * every provider (some flag error parts, others flatten them to text).
 */
function toModelOutput(result: ToolResult): ModelToolResultOutput {
  return typeof result.output === 'string'
    ? { type: 'text', value: result.output }
    : { type: 'json', value: result.output };
}
