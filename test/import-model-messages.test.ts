import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateText, type ModelMessage, stepCountIs, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent } from '../src/agent/create-agent.ts';
import { importModelMessages, UNANSWERED_OUTPUT } from '../src/agent/import-model-messages.ts';
import { auditTrail } from '../src/agent/queries.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { recordingModel } from './helpers/recording-model.ts';
import { scriptModel } from './helpers/script-model.ts';

const lookup = tool({
  description: 'Order status.',
  inputSchema: z.object({ orderId: z.number() }),
  needsApproval: false,
  execute: async ({ orderId }) => ({ orderId, status: 'shipped' }),
});

/** A conversation exactly as the AI SDK produces it: generateText with a tool step. */
async function aiSdkConversation(): Promise<ModelMessage[]> {
  const user: ModelMessage = { role: 'user', content: 'Where is order 7?' };
  const result = await generateText({
    model: scriptModel([[{ tool: 'lookup', args: { orderId: 7 } }], ['Order 7 has shipped.']]),
    tools: { lookup },
    stopWhen: stepCountIs(3),
    messages: [user],
  });
  // ai v7: each step carries its own response messages.
  return [
    { role: 'system', content: 'Be brief.' },
    user,
    ...result.steps.flatMap((step) => step.response.messages),
  ];
}

describe('importModelMessages', () => {
  it('imports an AI SDK conversation; the agent continues it with the history in its prompt', async () => {
    const history = await aiSdkConversation();
    const store = createSqliteStore({
      path: join(mkdtempSync(join(tmpdir(), 'countersign-import-')), 's.db'),
    });
    const imported = await importModelMessages(store, 's1', history, {
      agent: 'desk',
      principal: 'c-1',
      by: 'ops',
    });
    expect(imported).toEqual({ session: 's1', messages: 4, droppedSystem: 1, closed: [] });
    expect((await store.loadMessages('s1')).map((m) => m.message)).toEqual([
      { role: 'user', text: 'Where is order 7?' },
      { role: 'assistant', text: '', calls: [{ id: 'call-1', tool: 'lookup', args: { orderId: 7 } }] },
      {
        role: 'tool',
        results: [{ callId: 'call-1', tool: 'lookup', output: { orderId: 7, status: 'shipped' } }],
      },
      { role: 'assistant', text: 'Order 7 has shipped.' },
    ]);
    expect((await auditTrail(store, { session: 's1' })).map((e) => [e.kind, e.actor])).toEqual([
      ['session.imported', 'ops'],
    ]);

    const model = recordingModel(scriptModel([['Anything else?']]));
    const agent = createAgent({ name: 'desk', instructions: 'Help.', tools: { lookup }, model, store });
    const turn = await agent.chat('s1', 'Thanks!', { principal: 'c-1' });
    expect(turn.reply).toBe('Anything else?');
    const prompt = JSON.stringify(model.calls[0]?.prompt);
    expect(prompt).toContain('Where is order 7?');
    expect(prompt).toContain('shipped');
    await expect(agent.chat('s1', 'hi', { principal: 'c-2' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await store.close();
  });

  it('refuses a call without a result by default, naming it, and imports nothing', async () => {
    const store = createMemoryStore();
    const dangling: ModelMessage[] = [
      { role: 'user', content: 'Refund order 7' },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c9', toolName: 'refund', input: { orderId: 7 } }],
      },
    ];
    await expect(importModelMessages(store, 's1', dangling, { agent: 'desk' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('the tool call refund (c9) has no result'),
    });
    expect(await store.getSession('s1')).toBeNull();
  });

  it("closes calls without a result with unanswered: 'close'; none runs or waits for approval", async () => {
    const store = createMemoryStore();
    const dangling: ModelMessage[] = [
      { role: 'user', content: [{ type: 'text', text: 'Refund order 7' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Refunding.' },
          { type: 'tool-call', toolCallId: 'c9', toolName: 'refund', input: { orderId: 7 } },
        ],
      },
      { role: 'user', content: 'Never mind.' },
    ];
    const imported = await importModelMessages(store, 's1', dangling, { agent: 'desk', unanswered: 'close' });
    expect(imported.closed).toEqual(['c9']);
    expect((await store.loadMessages('s1')).map((m) => m.message)).toEqual([
      { role: 'user', text: 'Refund order 7' },
      { role: 'assistant', text: 'Refunding.', calls: [{ id: 'c9', tool: 'refund', args: { orderId: 7 } }] },
      { role: 'tool', results: [{ callId: 'c9', tool: 'refund', output: UNANSWERED_OUTPUT, isError: true }] },
      { role: 'user', text: 'Never mind.' },
    ]);
    expect(await store.listApprovals()).toEqual([]);
  });

  it('keeps errors and denials as error results', async () => {
    const store = createMemoryStore();
    await importModelMessages(
      store,
      's1',
      [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: [
            { type: 'tool-call', toolCallId: 'a', toolName: 'x', input: {} },
            { type: 'tool-call', toolCallId: 'b', toolName: 'y', input: {} },
          ],
        },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'a',
              toolName: 'x',
              output: { type: 'error-text', value: 'boom' },
            },
            {
              type: 'tool-result',
              toolCallId: 'b',
              toolName: 'y',
              output: { type: 'execution-denied', reason: 'No.' },
            },
          ],
        },
      ],
      { agent: 'desk' },
    );
    const tool = (await store.loadMessages('s1'))[2]?.message;
    expect(tool).toEqual({
      role: 'tool',
      results: [
        { callId: 'a', tool: 'x', output: 'boom', isError: true },
        { callId: 'b', tool: 'y', output: 'No.', isError: true },
      ],
    });
  });

  it('refuses what it cannot store, results without calls, and an existing session', async () => {
    const store = createMemoryStore();
    const image: ModelMessage[] = [
      { role: 'user', content: [{ type: 'image', image: new URL('https://x.test/a.png') }] },
    ];
    await expect(importModelMessages(store, 's1', image, { agent: 'desk' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('message 1 holds a "image" part'),
    });
    const orphan: ModelMessage[] = [
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'z', toolName: 'x', output: { type: 'text', value: 'hi' } },
        ],
      },
    ];
    await expect(importModelMessages(store, 's1', orphan, { agent: 'desk' })).rejects.toMatchObject({
      message: expect.stringContaining('the tool result z answers no open call'),
    });
    await importModelMessages(store, 's1', [{ role: 'user', content: 'hi' }], { agent: 'desk' });
    await expect(
      importModelMessages(store, 's1', [{ role: 'user', content: 'again' }], { agent: 'desk' }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(importModelMessages(store, 'bad id', [], { agent: 'desk' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });
  it('refuses arguments or an output nested deeper than 64 levels, naming the message, and imports nothing', async () => {
    const store = createMemoryStore();
    let deep: unknown = 1;
    for (let i = 0; i < 65; i++) deep = { k: deep };
    const conversation = (input: unknown, value: unknown): ModelMessage[] =>
      [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input }] },
        {
          role: 'tool',
          content: [
            { type: 'tool-result', toolCallId: 'c1', toolName: 'lookup', output: { type: 'json', value } },
          ],
        },
      ] as ModelMessage[];
    for (const [messages, where] of [
      [conversation(deep, {}), 'message 2'],
      [conversation({}, deep), 'message 3'],
    ] as const) {
      await expect(importModelMessages(store, 's1', messages, { agent: 'desk' })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        message: expect.stringContaining(
          `Cannot import the conversation: ${where}: a value is nested too deeply. It nests deeper than 64 levels`,
        ),
      });
    }
    expect(await store.getSession('s1')).toBeNull();
    expect(await store.listAudit()).toEqual([]);
  });
});
