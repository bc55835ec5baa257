import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jsonSchema, tool, zodSchema } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod/v3';
import { createAgent } from '../src/agent/create-agent.ts';
import { listExecutions } from '../src/agent/queries.ts';
import { CountersignError } from '../src/core/errors/countersign-error.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { withApproval } from '../src/tools/ai-sdk-tool.ts';
import { defineTool } from '../src/tools/define-tool.ts';
import type { AgentTools } from '../src/tools/normalize-tools.ts';
import { recordingModel } from './helpers/recording-model.ts';
import { type Step, scriptModel } from './helpers/script-model.ts';

function agentWith(tools: AgentTools, steps: Step[]) {
  const model = recordingModel(scriptModel(steps));
  const store = createMemoryStore();
  const agent = createAgent({ name: 'desk', instructions: 'Help.', tools, model, store });
  return { agent, model, store };
}

function configError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(CountersignError.is(error) && error.code).toBe('CONFIG_ERROR');
    return (error as Error).message;
  }
  throw new Error('expected a CONFIG_ERROR');
}

const cancelled: number[] = [];
const cancelOrder = tool({
  description: 'Cancel an order.',
  inputSchema: z.object({ orderId: z.number().int() }),
  execute: async ({ orderId }) => {
    cancelled.push(orderId);
    return { cancelled: orderId };
  },
});

describe('AI SDK tools in createAgent', () => {
  it('takes a record of tool({...}): the model sees name and schema, the call waits, then runs once', async () => {
    cancelled.length = 0;
    const { agent, model, store } = agentWith({ cancel_order: cancelOrder }, [
      [{ tool: 'cancel_order', args: { orderId: 7 } }],
      ['Cancelled.'],
    ]);
    const first = await agent.chat('s1', 'cancel 7');
    expect(model.calls[0]?.tools).toEqual([
      expect.objectContaining({ type: 'function', name: 'cancel_order', description: 'Cancel an order.' }),
    ]);
    expect(model.calls[0]?.tools?.[0]).toMatchObject({
      inputSchema: { type: 'object', properties: { orderId: { type: 'integer' } }, required: ['orderId'] },
    });
    // No needsApproval: countersign's safe default asks a person.
    expect(first.status).toBe('awaiting_approval');
    expect(cancelled).toEqual([]);
    const done = await agent.approve(first.approvals[0]!.id, { by: 'alice' });
    expect(done).toMatchObject({ status: 'completed', reply: 'Cancelled.' });
    expect(cancelled).toEqual([7]);
    expect(await listExecutions(store)).toMatchObject([
      { tool: 'cancel_order', status: 'succeeded', result: { cancelled: 7 } },
    ]);
  });

  it('maps needsApproval: false runs at once, a function decides per call', async () => {
    const lookups: string[] = [];
    const tools = {
      lookup: tool({
        description: 'Look up.',
        inputSchema: z.object({ q: z.string() }),
        needsApproval: false,
        execute: async ({ q }) => {
          lookups.push(q);
          return 'found';
        },
      }),
      refund: tool({
        description: 'Refund.',
        inputSchema: z.object({ amount: z.number() }),
        needsApproval: async ({ amount }) => amount > 50,
        execute: async ({ amount }) => ({ refunded: amount }),
      }),
    };
    const { agent } = agentWith(tools, [
      [
        { tool: 'lookup', args: { q: 'x' } },
        { tool: 'refund', args: { amount: 10 } },
      ],
      [{ tool: 'refund', args: { amount: 80 } }],
    ]);
    const turn = await agent.chat('s1', 'go');
    expect(lookups).toEqual(['x']);
    expect(turn.status).toBe('awaiting_approval');
    expect(turn.approvals).toMatchObject([{ tool: 'refund', args: { amount: 80 } }]);
  });

  it('a ttl reaching past the year 9999 refuses the call with INVALID_INPUT and raises nothing', async () => {
    // Stored as +011…-… text such a request would sort before every date: expired on arrival.
    // A ttl that long is refused where it is defined (test/definition-ttl.test.ts); one that
    // fits when defined can still pass the year 9999 from a later clock, and raising refuses it.
    const clock = { now: new Date('2026-01-01T00:00:00.000Z') };
    const model = recordingModel(scriptModel([[{ tool: 'cancel_order', args: { orderId: 7 } }]]));
    const store = createMemoryStore();
    const agent = createAgent({
      name: 'desk',
      instructions: 'Help.',
      tools: { cancel_order: cancelOrder },
      model,
      store,
      approvalTtl: '7000y',
      now: () => clock.now,
    });
    clock.now = new Date('3026-01-01T00:00:00.000Z');
    await expect(agent.chat('s1', 'cancel 7')).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('falls outside the years 0000 to 9999'),
    });
    expect(await store.listApprovals()).toEqual([]);
  });

  it('withApproval adds effect, standing, role and ttl; the tool stays usable by the AI SDK', async () => {
    const refund = withApproval(
      tool({
        description: 'Refund an order.',
        inputSchema: z.object({ orderId: z.number(), amount: z.number() }),
        execute: async ({ amount }) => ({ refunded: amount }),
      }),
      {
        name: 'refund',
        effect: ({ orderId, amount }) => `Refund ${amount} EUR on order ${orderId}.`,
        standing: false,
        role: 'manager',
        ttl: '15m',
        idempotent: true,
      },
    );
    expect(refund.description).toBe('Refund an order.');
    expect(typeof refund.execute).toBe('function');
    const { agent } = agentWith([refund], [[{ tool: 'refund', args: { orderId: 3, amount: 20 } }]]);
    expect(agent.tools[0]).toMatchObject({
      name: 'refund',
      standing: false,
      role: 'manager',
      idempotent: true,
    });
    expect(agent.tools[0]?.ttlMs).toBe(15 * 60_000);
    const turn = await agent.chat('s1', 'refund');
    expect(turn.approvals[0]).toMatchObject({ effect: 'Refund 20 EUR on order 3.' });
    await expect(
      agent.decide(turn.approvals[0]!.id, { approved: true, by: 'boss', remember: 'tool' }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });

  it('mixes defineTool tools and AI SDK tools in one array', () => {
    const note = defineTool({
      name: 'add_note',
      description: 'Add a note.',
      input: z.object({ text: z.string() }),
      approval: 'never',
      execute: () => 'ok',
    });
    const { agent } = agentWith([note, withApproval(cancelOrder, { name: 'cancel_order' })], []);
    expect(agent.tools.map((t) => t.name)).toEqual(['add_note', 'cancel_order']);
  });

  it('refuses wrong shapes with a CONFIG_ERROR that names the tool and what is missing', () => {
    expect(configError(() => agentWith([cancelOrder], []))).toMatch(
      /Tool #1 of agent desk is an AI SDK tool without a name.*withApproval/,
    );
    const noExecute = tool({ description: 'x', inputSchema: z.object({}) });
    expect(configError(() => agentWith({ lookup: noExecute }, []))).toMatch(
      /Tool lookup has no execute function/,
    );
    expect(
      configError(() =>
        agentWith(
          {
            search: {
              type: 'provider',
              id: 'openai.web_search',
              args: {},
              inputSchema: z.object({}),
            } as never,
          },
          [],
        ),
      ),
    ).toMatch(/Tool search is a provider tool/);
    expect(
      configError(() => agentWith({ lookup: { inputSchema: { hello: 1 }, execute: () => 1 } }, [])),
    ).toMatch(/Tool lookup's input schema is not a schema countersign can read/);
    expect(
      configError(() =>
        agentWith(
          { lookup: { inputSchema: { type: 'object', properties: { a: { type: 7 } } }, execute: () => 1 } },
          [],
        ),
      ),
    ).toMatch(/Tool lookup's JSON Schema is not valid/);
    expect(
      configError(() => agentWith({ other: withApproval(cancelOrder, { name: 'cancel_order' }) }, [])),
    ).toMatch(/named "cancel_order" but listed under "other"/);
    expect(configError(() => agentWith({ 'bad name': cancelOrder }, []))).toMatch(/Tool name "bad name"/);
    expect(configError(() => agentWith([{ name: 'x' } as never], []))).toMatch(
      /Tool #1 of agent desk is neither a defineTool tool nor an AI SDK tool/,
    );
    expect(
      configError(() => createAgent({ name: 'desk', instructions: '', tools: undefined as never })),
    ).toMatch(/has no tools option/);
  });
});

/** One tool per schema kind; every kind must really validate what the model sent. */
const schemaKinds = {
  'zod 4': z.object({ text: z.string().min(1) }),
  'zod 3': z3.object({ text: z3.string().min(1) }),
  'AI SDK zodSchema()': zodSchema(z.object({ text: z.string().min(1) })),
  'AI SDK jsonSchema()': jsonSchema<{ text: string }>({
    type: 'object',
    properties: { text: { type: 'string', minLength: 1 } },
    required: ['text'],
    additionalProperties: false,
  }),
  'plain JSON Schema': {
    type: 'object',
    properties: { text: { type: 'string', minLength: 1 } },
    required: ['text'],
    additionalProperties: false,
  },
  'Standard Schema': {
    '~standard': {
      version: 1,
      vendor: 'handmade',
      validate: (value: unknown) =>
        typeof (value as { text?: unknown })?.text === 'string' && (value as { text: string }).text.length > 0
          ? { value }
          : { issues: [{ message: 'text must be a non-empty string', path: ['text'] }] },
      jsonSchema: {
        input: () => ({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }),
        output: () => ({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }),
      },
    },
  },
} as const;

describe.each(Object.entries(schemaKinds))('input schema as %s', (_kind, schema) => {
  it('sends a JSON Schema to the model, runs valid calls and returns bad ones to the model', async () => {
    const notes: unknown[] = [];
    const aiTool = tool({
      description: 'Add a note.',
      inputSchema: schema as never,
      needsApproval: false,
      execute: async (args: unknown) => {
        notes.push(args);
        return 'noted';
      },
    });
    const defined = defineTool({
      name: 'add_note_too',
      description: 'Add a note.',
      input: schema,
      approval: 'never',
      execute: (args) => {
        notes.push(args);
        return 'noted';
      },
    });
    const { agent, model, store } = agentWith({ add_note: aiTool, add_note_too: defined }, [
      [
        { tool: 'add_note', args: { text: 'hello' } },
        { tool: 'add_note', args: { text: 42 } },
        { tool: 'add_note_too', args: { text: 'again' } },
        { tool: 'add_note_too', args: {} },
      ],
      ['done'],
    ]);
    await agent.chat('s1', 'note');
    expect(model.calls[0]?.tools?.[0]).toMatchObject({
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
    });
    expect((model.calls[0]!.tools![0] as { inputSchema?: unknown }).inputSchema).not.toHaveProperty(
      '$schema',
    );
    expect(notes).toEqual([{ text: 'hello' }, { text: 'again' }]);
    const messages = await store.loadMessages('s1');
    const results = messages.flatMap((m) => (m.message.role === 'tool' ? m.message.results : []));
    expect(results.filter((r) => r.isError).map((r) => r.output)).toEqual([
      expect.stringMatching(/^Invalid arguments for add_note: text: .+Nothing was run/),
      expect.stringMatching(/^Invalid arguments for add_note_too: .+Nothing was run/),
    ]);
  });
});

describe('tool identity', () => {
  it('stays what it was for zod 4 defineTool tools, so standing rules keep matching', () => {
    const tool = defineTool({
      name: 't',
      description: 'Cancel an order.',
      input: z.object({
        orderId: z.number().int().positive().describe('The order number'),
        reason: z.string().max(200).optional(),
      }),
      execute: () => null,
    });
    // Computed with the defineTool of commit b7c763c, before other schema kinds were accepted.
    expect(tool.identity).toBe('t@29be50fe99940d61');
  });

  it('is the same for an AI SDK tool and a defineTool tool with the same zod schema', () => {
    const input = z.object({ orderId: z.number() });
    const a = defineTool({ name: 'x', description: 'd', input, execute: () => null });
    const { agent } = agentWith(
      { x: tool({ description: 'd', inputSchema: input, execute: async () => null }) },
      [],
    );
    expect(agent.tools[0]?.identity).toBe(a.identity);
  });
});

describe('AI SDK tools on SQLite', () => {
  it('survive a restart: an approved call runs from the stored arguments', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'countersign-tools-')), 'store.db');
    cancelled.length = 0;
    const first = createAgent({
      name: 'desk',
      instructions: 'Help.',
      tools: { cancel_order: cancelOrder },
      model: scriptModel([[{ tool: 'cancel_order', args: { orderId: 9 } }], ['ok']]),
      store: createSqliteStore({ path }),
    });
    const turn = await first.chat('s1', 'cancel 9');
    const later = first.with({ store: createSqliteStore({ path }) });
    await later.approve(turn.approvals[0]!.id, { by: 'alice' });
    expect(cancelled).toEqual([9]);
  });
});
