import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { APICallError, type LanguageModelV4, type LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent } from '../src/agent/create-agent.ts';
import type { RetryNotice } from '../src/model/call-model.ts';
import { createDemoModel } from '../src/model/demo-model.ts';
import { resolveModel } from '../src/model/resolve-model.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';
import type { Store } from '../src/store/store.ts';
import { defineTool } from '../src/tools/define-tool.ts';
import { bookstore } from './helpers/bookstore-agent.ts';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

type Attempt = { parts: LanguageModelV4StreamPart[]; thenFail?: unknown } | { fail: unknown };

/** A model that only streams: each call plays the next attempt (parts, then maybe an error). */
function streamOnlyModel(attempts: Attempt[]): LanguageModelV4 & { calls: number } {
  const model = {
    specificationVersion: 'v4' as const,
    provider: 'test',
    modelId: 'stream-only',
    supportedUrls: {},
    calls: 0,
    async doGenerate(): Promise<never> {
      throw new Error('Not implemented');
    },
    async doStream() {
      const attempt = attempts[model.calls++] ?? { parts: reply('done') };
      if ('fail' in attempt) throw attempt.fail;
      const parts = [...attempt.parts];
      return {
        stream: new ReadableStream<LanguageModelV4StreamPart>({
          // Pulled one part at a time, so the error comes after the parts, as from a socket.
          pull(controller) {
            const part = parts.shift();
            if (part) controller.enqueue(part);
            else if (attempt.thenFail) controller.error(attempt.thenFail);
            else controller.close();
          },
        }),
      };
    },
  };
  return model;
}

function reply(...deltas: string[]): LanguageModelV4StreamPart[] {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
    ...deltas.map((delta) => ({ type: 'text-delta' as const, id: 't', delta })),
    { type: 'text-end', id: 't' },
    { type: 'finish', usage, finishReason: { unified: 'stop', raw: 'stop' } },
  ];
}

const cut = (...deltas: string[]): Attempt => ({
  parts: reply(...deltas).slice(0, 2 + deltas.length),
  thenFail: Object.assign(new TypeError('terminated'), { cause: { code: 'UND_ERR_SOCKET' } }),
});

const status = (statusCode: number, headers: Record<string, string> = {}) =>
  new APICallError({
    message: `HTTP ${statusCode}`,
    url: 'http://model.test',
    requestBodyValues: {},
    statusCode,
    responseHeaders: headers,
  });

function agentOn(model: LanguageModelV4, store: Store = createMemoryStore(), retry?: object | false) {
  return createAgent({
    name: 'desk',
    instructions: 'Help.',
    tools: [],
    model,
    store,
    stream: true,
    retry: retry ?? { initialDelayMs: 0 },
  });
}

async function storedTexts(store: Store, session: string): Promise<string[]> {
  return (await store.loadMessages(session)).map((m) =>
    m.message.role === 'user' || m.message.role === 'assistant'
      ? `${m.message.role}:${m.message.text}`
      : 'tool',
  );
}

describe('streamed replies', () => {
  it('passes text to onText as it is generated and stores what doGenerate would have stored', async () => {
    const streamed = bookstore();
    const deltas: string[] = [];
    const turn = await streamed.agent.chat('s1', "What's the status of order 1044?", {
      principal: 'c-100',
      onText: (delta) => deltas.push(delta),
    });
    const generated = bookstore();
    const plain = await generated.agent.chat('s1', "What's the status of order 1044?", {
      principal: 'c-100',
    });
    expect(turn.reply).toBe(plain.reply);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(turn.reply);
    const strip = (store: Store) => store.loadMessages('s1').then((all) => all.map((m) => m.message));
    expect(await strip(streamed.store)).toEqual(await strip(generated.store));
  });

  it('works with a model that only streams', async () => {
    const model = streamOnlyModel([{ parts: reply('Hel', 'lo') }]);
    const turn = await agentOn(model).chat('s1', 'hi');
    expect(turn).toMatchObject({ status: 'completed', reply: 'Hello' });
  });

  it('a stream cut midway without retry leaves the step unstored; resume continues it', async () => {
    const store = createMemoryStore();
    const model = streamOnlyModel([cut('Half a re'), { parts: reply('Whole reply.') }]);
    const agent = agentOn(model, store, false);
    const seen: string[] = [];
    await expect(agent.chat('s1', 'hi', { onText: (d) => seen.push(d) })).rejects.toMatchObject({
      code: 'MODEL_ERROR',
    });
    expect(seen).toEqual(['Half a re']);
    expect(await storedTexts(store, 's1')).toEqual(['user:hi']);
    expect(await agent.resume('s1')).toMatchObject({ reply: 'Whole reply.' });
    expect(await storedTexts(store, 's1')).toEqual(['user:hi', 'assistant:Whole reply.']);
  });

  it('retries a cut stream: onRetry names the text to drop, only the finished try is stored', async () => {
    const store = createMemoryStore();
    const model = streamOnlyModel([cut('Half'), { parts: reply('Whole ', 'reply.') }]);
    const text: string[] = [];
    const retries: RetryNotice[] = [];
    const turn = await agentOn(model, store).chat('s1', 'hi', {
      onText: (d) => text.push(d),
      onRetry: (notice) => retries.push(notice),
    });
    expect(turn.reply).toBe('Whole reply.');
    expect(text).toEqual(['Half', 'Whole ', 'reply.']);
    expect(retries).toMatchObject([{ attempt: 1, discardedText: 'Half', delayMs: 0 }]);
    expect(await storedTexts(store, 's1')).toEqual(['user:hi', 'assistant:Whole reply.']);
  });

  it('a listener that throws does not fail the turn', async () => {
    const turn = await agentOn(streamOnlyModel([{ parts: reply('ok') }])).chat('s1', 'hi', {
      onText: () => {
        throw new Error('tab closed');
      },
    });
    expect(turn.reply).toBe('ok');
  });
});

describe('retry of model calls', () => {
  it('retries 429 and 5xx, honouring Retry-After within the cap', async () => {
    const model = streamOnlyModel([
      { fail: status(429, { 'retry-after-ms': '5' }) },
      { fail: status(503) },
      { parts: reply('ok') },
    ]);
    const retries: RetryNotice[] = [];
    const turn = await agentOn(model, createMemoryStore(), { initialDelayMs: 1, maxAttempts: 3 }).chat(
      's1',
      'hi',
      {
        onRetry: (n) => retries.push(n),
      },
    );
    expect(turn.reply).toBe('ok');
    expect(retries.map((n) => n.delayMs)).toEqual([5, 2]);
  });

  it('does not retry what would fail again (400), and gives up after maxAttempts', async () => {
    const bad = streamOnlyModel([{ fail: status(400) }]);
    await expect(agentOn(bad).chat('s1', 'hi')).rejects.toMatchObject({ code: 'MODEL_ERROR' });
    expect(bad.calls).toBe(1);
    const down = streamOnlyModel([{ fail: status(503) }, { fail: status(503) }, { fail: status(503) }]);
    const error = await agentOn(down)
      .chat('s1', 'hi')
      .catch((caught: Error) => caught);
    expect(error).toMatchObject({ code: 'MODEL_ERROR', message: expect.stringContaining('tried 3 times') });
    expect(down.calls).toBe(3);
  });

  it('retries a network error from fetch, and is off with retry: false', async () => {
    const network = () => Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
    const flaky = streamOnlyModel([{ fail: network() }, { parts: reply('ok') }]);
    expect((await agentOn(flaky).chat('s1', 'hi')).reply).toBe('ok');
    const off = streamOnlyModel([{ fail: network() }, { parts: reply('ok') }]);
    await expect(agentOn(off, createMemoryStore(), false).chat('s1', 'hi')).rejects.toMatchObject({
      code: 'MODEL_ERROR',
    });
    expect(off.calls).toBe(1);
  });

  it('a retried step that proposed a call raises one request, not two', async () => {
    const store = createMemoryStore();
    const call: LanguageModelV4StreamPart = {
      type: 'tool-call',
      toolCallId: 'c1',
      toolName: 'refund',
      input: '{"amount":5}',
    };
    const finish: LanguageModelV4StreamPart = {
      type: 'finish',
      usage,
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    };
    const model = streamOnlyModel([
      { parts: [{ type: 'stream-start', warnings: [] }, call], thenFail: status(502) },
      { parts: [{ type: 'stream-start', warnings: [] }, call, finish] },
    ]);
    const agent = createAgent({
      name: 'desk',
      instructions: 'Help.',
      tools: [
        defineTool({
          name: 'refund',
          description: 'Refund.',
          input: z.object({ amount: z.number() }),
          execute: () => 'ok',
        }),
      ],
      model,
      store,
      stream: true,
      retry: { initialDelayMs: 0 },
    });
    const turn = await agent.chat('s1', 'refund 5');
    expect(turn.approvals).toHaveLength(1);
    expect(await store.listApprovals({ status: 'pending' })).toHaveLength(1);
  });
});

describe('streaming and retry over real HTTP (@ai-sdk/openai-compatible on loopback)', () => {
  let server: Server | undefined;
  afterEach(async () => {
    const running = server;
    server = undefined;
    if (!running) return;
    running.closeAllConnections();
    await new Promise((resolve) => running.close(resolve));
  });

  /** First request: a 503. Second: one chunk, then the connection drops. Third: a full stream. */
  async function flakyServer(): Promise<{ url: string; requests: () => number }> {
    let requests = 0;
    server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        requests++;
        if (requests === 1) {
          response.writeHead(503, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } }));
          return;
        }
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        const chunk = (delta: object, finish: string | null = null) =>
          `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        response.write(chunk({ role: 'assistant', content: 'Your order ' }));
        if (requests === 2) {
          // The chunk goes out, then the connection closes mid-body, as when a proxy drops it.
          response.write('', () => response.socket?.end());
          return;
        }
        response.write(chunk({ content: 'is on its way.' }));
        response.write(chunk({}, 'stop'));
        response.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      requests: () => requests,
    };
  }

  it('survives a 503 and a dropped stream, streams the reply and stores it once', async () => {
    const { url, requests } = await flakyServer();
    const model = await resolveModel('openai-compatible:m', { OPENAI_BASE_URL: url });
    const store = createMemoryStore();
    const agent = createAgent({
      name: 'desk',
      instructions: 'Help.',
      tools: [],
      model,
      store,
      retry: { initialDelayMs: 1 },
    });
    const text: string[] = [];
    const retries: RetryNotice[] = [];
    const turn = await agent.chat('s1', 'where is my order?', {
      onText: (d) => text.push(d),
      onRetry: (n) => retries.push(n),
    });
    expect(turn.reply).toBe('Your order is on its way.');
    expect(requests()).toBe(3);
    expect(retries.map((n) => n.discardedText)).toEqual(['', 'Your order ']);
    expect(text.join('')).toBe('Your order Your order is on its way.');
    expect(await storedTexts(store, 's1')).toEqual([
      'user:where is my order?',
      'assistant:Your order is on its way.',
    ]);
  });

  it('without a listener the agent calls doGenerate, as before', async () => {
    const demo = createDemoModel();
    let streamed = 0;
    const model = {
      ...demo,
      doStream: (o: Parameters<typeof demo.doStream>[0]) => {
        streamed++;
        return demo.doStream(o);
      },
    };
    const { agent } = bookstore({ model });
    await agent.chat('s1', 'hello', { principal: 'c-100' });
    expect(streamed).toBe(0);
  });
});
