import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDemoModel } from '../../src/model/demo-model.ts';
import { fromModelResult } from '../../src/model/from-model-result.ts';
import {
  type ChatCompletionsRequestBody,
  type ChatToolCall,
  type ScriptedReply,
  toCallOptions,
} from './chat-completions.ts';

export type { ChatCompletionsRequestBody, ScriptedReply } from './chat-completions.ts';

export type ScriptedHandler = (body: ChatCompletionsRequestBody) => ScriptedReply | Promise<ScriptedReply>;

export interface ScriptedOpenAIServer {
  /** Base URL ending in /v1, ready for OPENAI_BASE_URL. */
  url: string;
  /** Every request body received, failed ones included, oldest first. */
  requests: ChatCompletionsRequestBody[];
  setHandler(handler: ScriptedHandler): void;
  /** The next `times` requests fail with `status` (default 500), as a server that is down. */
  fail(times: number, status?: number): void;
  close(): Promise<void>;
}

/** Answers like the demo model does, but through the real OpenAI-compatible wire format. */
export const demoHandler: ScriptedHandler = async (body) => {
  const result = await createDemoModel().doGenerate(toCallOptions(body));
  const { text, calls } = fromModelResult(result);
  return {
    text,
    toolCalls: calls.map((call) => ({ id: call.id, name: call.tool, arguments: JSON.stringify(call.args) })),
  };
};

/**
 * A real HTTP server speaking enough of OpenAI Chat Completions for
 * `openai-compatible:scripted`, so end-to-end tests exercise the actual provider package.
 */
export async function startScriptedOpenAIServer(
  handler: ScriptedHandler = demoHandler,
): Promise<ScriptedOpenAIServer> {
  let current = handler;
  let failures = 0;
  let failStatus = 500;
  let served = 0;
  const requests: ChatCompletionsRequestBody[] = [];

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      send(response, 500, {
        error: { message: error instanceof Error ? error.message : String(error), type: 'server_error' },
      });
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '').split('?')[0];
    if (request.method === 'GET' && path === '/v1/models') {
      send(response, 200, {
        object: 'list',
        data: [{ id: 'scripted', object: 'model', owned_by: 'countersign' }],
      });
      return;
    }
    if (request.method !== 'POST' || path !== '/v1/chat/completions') {
      send(response, 404, {
        error: { message: `No route for ${request.method} ${path}.`, type: 'invalid_request_error' },
      });
      return;
    }
    let body: ChatCompletionsRequestBody;
    try {
      body = JSON.parse(await readBody(request)) as ChatCompletionsRequestBody;
    } catch {
      send(response, 400, {
        error: { message: 'The request body is not JSON.', type: 'invalid_request_error' },
      });
      return;
    }
    requests.push(body);
    if (failures > 0) {
      failures--;
      send(response, failStatus, {
        error: { message: 'Scripted failure: the model server is down.', type: 'server_error' },
      });
      return;
    }
    const reply = await current(body);
    if ('status' in reply) {
      send(
        response,
        reply.status,
        reply.body ?? { error: { message: `Scripted status ${reply.status}.`, type: 'server_error' } },
      );
      return;
    }
    served++;
    const completion = toCompletion(body, reply, `chatcmpl-${served}`);
    if (body.stream) sendStream(response, completion, body.stream_options?.include_usage === true);
    else send(response, 200, completion);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    setHandler(next) {
      current = next;
    },
    fail(times, status = 500) {
      failures = times;
      failStatus = status;
    },
    close() {
      return new Promise((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // fetch keeps connections alive; without this close() waits for them to time out.
        server.closeAllConnections();
      });
    },
  };
}

interface Completion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: 0;
    message: { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] };
    finish_reason: 'stop' | 'tool_calls';
  }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

function toCompletion(
  body: ChatCompletionsRequestBody,
  reply: Exclude<ScriptedReply, { status: number }>,
  id: string,
): Completion {
  const toolCalls: ChatToolCall[] = (reply.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_${index + 1}`,
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
  const text = reply.text ?? '';
  const promptTokens = Math.ceil(JSON.stringify(body.messages).length / 4);
  const completionTokens = Math.ceil((text.length + JSON.stringify(toolCalls).length) / 4);
  return {
    id,
    object: 'chat.completion',
    // Zero keeps responses free of clock time; the provider reads it as "no timestamp".
    created: 0,
    model: body.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: toolCalls.length > 0 && !text ? null : text,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    },
  };
}

function sendStream(response: ServerResponse, completion: Completion, includeUsage: boolean): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const base = {
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
  };
  const chunk = (delta: object, finishReason: string | null = null) =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
  const choice = completion.choices[0]!;
  const { content, tool_calls: toolCalls = [] } = choice.message;
  response.write(chunk({ role: 'assistant', content: content ?? '' }));
  toolCalls.forEach((call, index) => {
    response.write(chunk({ tool_calls: [{ index, ...call }] }));
  });
  response.write(chunk({}, choice.finish_reason));
  if (includeUsage)
    response.write(`data: ${JSON.stringify({ ...base, choices: [], usage: completion.usage })}\n\n`);
  response.end('data: [DONE]\n\n');
}

function send(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}
