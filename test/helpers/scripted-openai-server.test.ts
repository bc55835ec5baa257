import { APICallError, type LanguageModelV4, type LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/core/messages.ts';
import { fromModelResult } from '../../src/model/from-model-result.ts';
import type { AnyLanguageModel } from '../../src/model/language-model.ts';
import { resolveModel } from '../../src/model/resolve-model.ts';
import { toModelPrompt } from '../../src/model/to-model-prompt.ts';
import { toModelTools } from '../../src/model/to-model-tools.ts';
import { bookstoreToolSpecs } from './example-tool-specs.ts';
import { type ScriptedOpenAIServer, startScriptedOpenAIServer } from './scripted-openai-server.ts';

let server: ScriptedOpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(): Promise<{ server: ScriptedOpenAIServer; model: AnyLanguageModel }> {
  server = await startScriptedOpenAIServer();
  return { server, model: await resolveModel('openai-compatible:scripted', { OPENAI_BASE_URL: server.url }) };
}

async function step(model: AnyLanguageModel, messages: Message[]) {
  // Exactly how the agent calls a model: doGenerate, no SDK wrapper, no retries.
  return model.doGenerate({
    prompt: toModelPrompt('You are a support agent.', messages),
    tools: toModelTools(bookstoreToolSpecs),
  });
}

describe('scripted OpenAI server behind @ai-sdk/openai-compatible', () => {
  it('answers "Please cancel my order 1044." with the cancel_order call', async () => {
    const { server, model } = await start();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const result = await step(model, [{ role: 'user', text: 'Please cancel my order 1044.' }]);
    expect(result.finishReason).toEqual({ unified: 'tool-calls', raw: 'tool_calls' });
    expect(fromModelResult(result)).toEqual({
      text: '',
      calls: [{ id: 'call_1', tool: 'cancel_order', args: { orderId: 1044 } }],
      invalid: [],
    });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.model).toBe('scripted');
    expect(server.requests[0]?.tools?.map((tool) => tool.function.name)).toEqual(
      bookstoreToolSpecs.map((tool) => tool.name),
    );
  });

  it('carries a rejection reason to the model and the reply back', async () => {
    const { server, model } = await start();
    const reason = 'Rejected by the reviewer, not done. Reason: That order already shipped.';
    const result = await step(model, [
      { role: 'user', text: 'Please cancel my order 1044.' },
      {
        role: 'assistant',
        text: '',
        calls: [{ id: 'call_1', tool: 'cancel_order', args: { orderId: 1044 } }],
      },
      { role: 'tool', results: [{ callId: 'call_1', tool: 'cancel_order', output: reason, isError: true }] },
    ]);
    expect(fromModelResult(result)).toEqual({
      text: `I did not cancel order 1044: ${reason}`,
      calls: [],
      invalid: [],
    });
    expect(result.finishReason.unified).toBe('stop');
    const sent = server.requests[0]?.messages.at(-1);
    expect(sent).toEqual({ role: 'tool', tool_call_id: 'call_1', content: reason });
  });

  it('makes a read and a write in one response', async () => {
    const { model } = await start();
    const result = await step(model, [{ role: 'user', text: "What's the status of 1043? And cancel 1044." }]);
    expect(fromModelResult(result).calls).toEqual([
      { id: 'call_1', tool: 'get_order_status', args: { orderId: 1043 } },
      { id: 'call_2', tool: 'cancel_order', args: { orderId: 1044 } },
    ]);
  });

  it('fails visibly: doGenerate does not retry, so fail(1) is one failed request', async () => {
    const { server, model } = await start();
    server.fail(1, 503);
    const error = await step(model, [{ role: 'user', text: 'hi' }]).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(503);
    expect(server.requests).toHaveLength(1);
    const next = await step(model, [{ role: 'user', text: 'hi' }]);
    expect(fromModelResult(next).text).toContain("countersign's offline demo model");
    expect(server.requests).toHaveLength(2);
  });

  it('lets a test script the reply, including arguments that are not JSON', async () => {
    const { server, model } = await start();
    server.setHandler(() => ({
      toolCalls: [{ id: 'x1', name: 'cancel_order', arguments: '{"orderId": 10' }],
    }));
    const turn = fromModelResult(await step(model, [{ role: 'user', text: 'cancel 10' }]));
    expect(turn.calls).toEqual([]);
    expect(turn.invalid).toEqual([
      expect.objectContaining({ id: 'x1', tool: 'cancel_order', raw: '{"orderId": 10' }),
    ]);
    server.setHandler(() => ({ status: 429, body: { error: { message: 'Slow down.' } } }));
    await expect(step(model, [{ role: 'user', text: 'again' }])).rejects.toThrow('Slow down.');
  });

  it('streams when asked to', async () => {
    const { model } = await start();
    const options: LanguageModelV4CallOptions = {
      prompt: toModelPrompt('', [{ role: 'user', text: "What's the status of 1043? And cancel 1044." }]),
      tools: toModelTools(bookstoreToolSpecs),
    };
    const { stream } = await (model as LanguageModelV4).doStream(options);
    const calls: Array<{ toolName: string; input: string }> = [];
    let finish: string | undefined;
    for await (const part of stream) {
      if (part.type === 'tool-call') calls.push({ toolName: part.toolName, input: part.input });
      if (part.type === 'finish') finish = part.finishReason.unified;
    }
    expect(calls).toEqual([
      { toolName: 'get_order_status', input: '{"orderId":1043}' },
      { toolName: 'cancel_order', input: '{"orderId":1044}' },
    ]);
    expect(finish).toBe('tool-calls');
  });
});
