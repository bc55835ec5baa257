import type {
  JSONSchema7,
  LanguageModelV3Prompt,
  LanguageModelV4Content,
  LanguageModelV4Prompt,
} from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import type { Message } from '../core/messages.ts';
import { fromModelResult } from './from-model-result.ts';
import { toModelMessage, toModelPrompt } from './to-model-prompt.ts';
import { toModelTools } from './to-model-tools.ts';

const history: Message[] = [
  { role: 'user', text: 'Cancel 1044 and tell me where 1043 is.' },
  {
    role: 'assistant',
    text: 'On it.',
    calls: [
      { id: 'c1', tool: 'get_order_status', args: { orderId: 1043 } },
      { id: 'c2', tool: 'cancel_order', args: { orderId: 1044 } },
    ],
  },
  {
    role: 'tool',
    results: [
      { callId: 'c1', tool: 'get_order_status', output: { orderId: 1043, status: 'shipped' } },
      {
        callId: 'c2',
        tool: 'cancel_order',
        output: 'Rejected by the reviewer, not done. Reason: no.',
        isError: true,
      },
    ],
  },
  { role: 'assistant', text: 'Order 1043 shipped; I did not cancel 1044.' },
];

describe('toModelPrompt', () => {
  it('maps each message to its prompt form, instructions first', () => {
    expect(toModelPrompt('Be brief.', history)).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Cancel 1044 and tell me where 1043 is.' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'On it.' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'get_order_status', input: { orderId: 1043 } },
          { type: 'tool-call', toolCallId: 'c2', toolName: 'cancel_order', input: { orderId: 1044 } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'get_order_status',
            output: { type: 'json', value: { orderId: 1043, status: 'shipped' } },
          },
          {
            type: 'tool-result',
            toolCallId: 'c2',
            toolName: 'cancel_order',
            output: { type: 'text', value: 'Rejected by the reviewer, not done. Reason: no.' },
          },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Order 1043 shipped; I did not cancel 1044.' }] },
    ]);
  });

  it('omits an empty system message and empty assistant text', () => {
    const prompt = toModelPrompt('', [
      { role: 'assistant', text: '', calls: [{ id: 'a', tool: 't', args: {} }] },
    ]);
    expect(prompt).toEqual([
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 't', input: {} }] },
    ]);
  });

  it('gives non-string outputs, errors included, as json', () => {
    const message = toModelMessage({
      role: 'tool',
      results: [
        { callId: 'a', tool: 't', output: null, isError: true },
        { callId: 'b', tool: 't', output: 42 },
      ],
    });
    if (message.role !== 'tool') throw new Error('expected a tool message');
    expect(message.content.map((part) => part.output)).toEqual([
      { type: 'json', value: null },
      { type: 'json', value: 42 },
    ]);
  });

  it('extends a prompt message by message to the same result', () => {
    const incremental = toModelPrompt('Be brief.', []);
    for (const message of history) incremental.push(toModelMessage(message));
    expect(incremental).toEqual(toModelPrompt('Be brief.', history));
  });

  it('is a prompt for both v4 and v3 models', () => {
    const prompt = toModelPrompt('x', history);
    const v4: LanguageModelV4Prompt = prompt;
    const v3: LanguageModelV3Prompt = prompt;
    expect(v4).toBe(v3);
  });

  it('round-trips calls through a model response', () => {
    const assistant = history[1]!;
    const message = toModelMessage(assistant);
    if (message.role !== 'assistant' || assistant.role !== 'assistant')
      throw new Error('expected an assistant message');
    // A model response carries the input as JSON text, where the prompt carries the value.
    const content = message.content.map(
      (part): LanguageModelV4Content =>
        part.type === 'tool-call' ? { ...part, input: JSON.stringify(part.input) } : part,
    );
    expect(fromModelResult({ content })).toEqual({ text: 'On it.', calls: assistant.calls, invalid: [] });
  });
});

describe('toModelTools', () => {
  it('makes function tools', () => {
    const schema: JSONSchema7 = {
      type: 'object',
      properties: { orderId: { type: 'integer' } },
      required: ['orderId'],
    };
    expect(
      toModelTools([{ name: 'cancel_order', description: 'Cancel an order.', inputSchema: schema }]),
    ).toEqual([
      { type: 'function', name: 'cancel_order', description: 'Cancel an order.', inputSchema: schema },
    ]);
  });
});
