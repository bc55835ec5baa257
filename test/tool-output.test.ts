import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tool } from 'ai';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent } from '../src/agent/create-agent.ts';
import { parseExportKeys } from '../src/agent/export-keys.ts';
import { exportSession, importSession } from '../src/agent/session-transfer.ts';
import { canonicalJson, sha256Hex } from '../src/core/canonical-json.ts';
import type { JsonValue } from '../src/core/json.ts';
import { createMemoryStore } from '../src/store/memory/memory-store.ts';
import { createPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../src/store/store.ts';
import { withApproval } from '../src/tools/ai-sdk-tool.ts';
import { defineTool } from '../src/tools/define-tool.ts';
import { toolOutput } from '../src/tools/tool-output.ts';
import { dropSchema, freshSchema, postgresForTests } from './helpers/postgres.ts';
import { scriptModel } from './helpers/script-model.ts';

function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

function cycle(): unknown {
  const value: Record<string, unknown> = { id: 7 };
  value.self = value;
  return value;
}

const NOT_KEPT = /^The tool ran, but its output could not be kept: /;

/** What a tool returns, and what the ledger, the session and the audit must then hold. */
const outputs: Array<{ name: string; returns: () => unknown; kept: JsonValue | RegExp }> = [
  { name: 'nothing (undefined)', returns: () => undefined, kept: null },
  { name: 'a Date', returns: () => new Date(0), kept: '1970-01-01T00:00:00.000Z' },
  {
    name: 'an object with a Date, an undefined field and a function',
    returns: () => ({ at: new Date(0), gone: undefined, fn: () => 1, list: [undefined, 2] }),
    kept: { at: '1970-01-01T00:00:00.000Z', list: [null, 2] },
  },
  { name: 'a bigint', returns: () => 12345678901234567890n, kept: '12345678901234567890' },
  { name: 'NaN', returns: () => Number.NaN, kept: null },
  { name: 'a cycle', returns: cycle, kept: /a cycle/ },
  { name: '65 levels', returns: () => nested(65), kept: /deeper than 64 levels/ },
  { name: '100,000 levels', returns: () => nested(100_000), kept: NOT_KEPT },
  { name: '64 levels', returns: () => nested(64), kept: nested(64) as JsonValue },
];

function expectKept(value: unknown, kept: JsonValue | RegExp): void {
  if (kept instanceof RegExp) {
    expect(value).toMatch(NOT_KEPT);
    expect(value).toMatch(kept);
  } else expect(value).toEqual(kept);
}

describe('toolOutput: what a tool returned, as plain JSON', () => {
  for (const { name, returns, kept } of outputs) {
    it(`${name}`, () => {
      expectKept(toolOutput(returns()), kept);
    });
  }

  it('a Proxy whose traps throw and a throwing getter are reported, not thrown', () => {
    const trap = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('trap');
        },
      },
    );
    expect(toolOutput(trap)).toMatch(/trap/);
    const getter = {
      get total() {
        throw new Error('getter');
      },
    };
    expect(toolOutput(getter)).toMatch(NOT_KEPT);
    expect(toolOutput(getter)).toMatch(/getter/);
  });

  it('a throwing toJSON is reported, not thrown', () => {
    const output = toolOutput({
      toJSON() {
        throw new Error('no');
      },
    });
    expect(output).toMatch(NOT_KEPT);
    expect(output).toMatch(/no/);
  });
});

const keys = parseExportKeys('k1:first-secret-first-secret-000000');
const url = await postgresForTests();
const schemas: string[] = [];
afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
});

const backends: Array<{ name: string; open(): Promise<Store> | Store; skip?: boolean }> = [
  { name: 'memory', open: () => createMemoryStore() },
  {
    name: 'SQLite',
    open: () => createSqliteStore({ path: join(mkdtempSync(join(tmpdir(), 'cs-tool-output-')), 's.db') }),
  },
  {
    name: 'PostgreSQL',
    skip: url === null,
    open: () => {
      const schema = freshSchema('tool_output');
      schemas.push(schema);
      return createPostgresStore({ connectionString: url!, schema });
    },
  },
];

/** The result the session's tool message holds for the call. */
async function toolMessageOutput(store: Store): Promise<unknown> {
  const snapshot = await store.exportSession('s1');
  for (const { message } of snapshot?.messages ?? []) {
    if (message.role === 'tool') return message.results[0]?.output;
  }
  throw new Error('no tool message');
}

for (const backend of backends) {
  describe.skipIf(backend.skip === true)(
    `a tool's output is recorded whatever it returns (${backend.name})`,
    () => {
      for (const { name, returns, kept } of outputs) {
        it(`an approved call that returns ${name}: succeeded, its output kept as JSON, the audit's hash over it, the session exports and imports`, async () => {
          const store = await backend.open();
          try {
            let runs = 0;
            const refund = defineTool({
              name: 'refund',
              description: 'Refund an order.',
              input: z.object({ orderId: z.number() }),
              approval: 'always',
              execute: (async () => {
                runs += 1;
                return returns();
              }) as () => Promise<JsonValue>,
            });
            const agent = createAgent({
              name: 'desk',
              instructions: '',
              tools: [refund],
              model: scriptModel([[{ tool: 'refund', args: { orderId: 1 } }], ['Done.']]),
              store,
            });
            const turn = await agent.chat('s1', 'refund 1');
            const id = turn.approvals[0]!.id;
            await agent.approve(id, { by: 'alice' });
            expect(runs).toBe(1);
            const record = await store.getExecution(id);
            expect(record?.status).toBe('succeeded');
            expectKept(record?.result, kept);
            expect(await toolMessageOutput(store)).toEqual(record?.result);
            const finished = (await store.listAudit()).find((entry) => entry.kind === 'execution.finished');
            expect(finished?.data).toMatchObject({ resultHash: sha256Hex(canonicalJson(record!.result)) });
            const file = JSON.parse(JSON.stringify(await exportSession(store, 's1', { keys })));
            const target = createMemoryStore();
            await importSession(target, file, { keys, agents: ['desk'] });
            expect((await target.getExecution(id))?.result).toEqual(record?.result);
          } finally {
            await store.close();
          }
        });
      }

      it('a call that needs no approval (an AI SDK tool, logged) returning a Date and a cycle: the run goes on, the log hashes what was kept', async () => {
        const store = await backend.open();
        try {
          const lookup = withApproval(
            tool({
              description: 'Look an order up.',
              inputSchema: z.object({ orderId: z.number() }),
              execute: async () => ({ placed: new Date(0), order: cycle() }),
            }),
            { name: 'lookup', approval: 'never', logged: true },
          );
          const agent = createAgent({
            name: 'desk',
            instructions: '',
            tools: [lookup],
            model: scriptModel([[{ tool: 'lookup', args: { orderId: 1 } }], ['Found it.']]),
            store,
          });
          const turn = await agent.chat('s1', 'where is 1?');
          expect(turn.reply).toBe('Found it.');
          const output = await toolMessageOutput(store);
          expect(output).toMatch(NOT_KEPT);
          const logged = (await store.listAudit()).find((entry) => entry.kind === 'call.logged');
          expect(logged?.data).toMatchObject({ resultHash: sha256Hex(canonicalJson(output)) });
        } finally {
          await store.close();
        }
      });
    },
  );
}
