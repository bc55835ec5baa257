import type { LanguageModelV3Content, LanguageModelV4Content } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { fromModelResult } from './from-model-result.ts';

describe('fromModelResult', () => {
  it('joins text parts and parses call input', () => {
    const content: LanguageModelV4Content[] = [
      { type: 'text', text: 'Checking ' },
      { type: 'tool-call', toolCallId: 'a', toolName: 'get_order_status', input: '{"orderId":1043}' },
      { type: 'text', text: 'now.' },
    ];
    expect(fromModelResult({ content })).toEqual({
      text: 'Checking now.',
      calls: [{ id: 'a', tool: 'get_order_status', args: { orderId: 1043 } }],
      invalid: [],
    });
  });

  it('puts unparseable input in invalid, keeping the raw text', () => {
    const content: LanguageModelV4Content[] = [
      { type: 'tool-call', toolCallId: 'a', toolName: 'cancel_order', input: '{"orderId": 10' },
      { type: 'tool-call', toolCallId: 'b', toolName: 'cancel_order', input: '{"orderId":11}' },
    ];
    const turn = fromModelResult({ content });
    expect(turn.calls).toEqual([{ id: 'b', tool: 'cancel_order', args: { orderId: 11 } }]);
    expect(turn.invalid).toEqual([
      {
        id: 'a',
        tool: 'cancel_order',
        raw: '{"orderId": 10',
        error: expect.stringMatching(/^The arguments are not valid JSON: /),
      },
    ]);
  });

  it('puts arguments nested deeper than 64 levels in invalid, never into the hash or the inbox', () => {
    const deep = `{"a":${'['.repeat(5_000)}${']'.repeat(5_000)}}`;
    const content: LanguageModelV4Content[] = [
      { type: 'tool-call', toolCallId: 'a', toolName: 'cancel_order', input: deep },
    ];
    const turn = fromModelResult({ content });
    expect(turn.calls).toEqual([]);
    expect(turn.invalid[0]!.error).toContain('deeper than 64 levels');
  });

  it('reads empty input as no arguments, as the AI SDK does', () => {
    const content: LanguageModelV4Content[] = [
      { type: 'tool-call', toolCallId: 'a', toolName: 'get_shopping_list', input: '' },
    ];
    expect(fromModelResult({ content }).calls).toEqual([{ id: 'a', tool: 'get_shopping_list', args: {} }]);
  });

  it('keeps non-object JSON as the arguments, for the tool schema to reject', () => {
    const content: LanguageModelV4Content[] = [
      { type: 'tool-call', toolCallId: 'a', toolName: 't', input: '"1044"' },
    ];
    expect(fromModelResult({ content }).calls).toEqual([{ id: 'a', tool: 't', args: '1044' }]);
  });

  it('ignores provider-executed calls, their results and reasoning', () => {
    const content: LanguageModelV4Content[] = [
      { type: 'reasoning', text: 'thinking' },
      { type: 'tool-call', toolCallId: 'w', toolName: 'web_search', input: '{}', providerExecuted: true },
      { type: 'tool-result', toolCallId: 'w', toolName: 'web_search', result: { hits: 3 } },
      { type: 'text', text: 'Done.' },
    ];
    expect(fromModelResult({ content })).toEqual({ text: 'Done.', calls: [], invalid: [] });
  });

  it('accepts v3 content', () => {
    const content: LanguageModelV3Content[] = [
      { type: 'tool-call', toolCallId: 'a', toolName: 't', input: '{"x":1}' },
    ];
    expect(fromModelResult({ content }).calls).toEqual([{ id: 'a', tool: 't', args: { x: 1 } }]);
  });
});
