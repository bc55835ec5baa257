import { randomBytes } from 'node:crypto';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { z } from 'zod';
import { type Agent, createAgent } from '../src/agent/create-agent.ts';
import type { Store } from '../src/store/store.ts';
import { defineTool } from '../src/tools/define-tool.ts';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/**
 * Zero-latency model for decision benchmarks: a user message gets one `refund` call, a tool
 * result gets a short reply.
 */
export const decisionModel: LanguageModelV4 = {
  specificationVersion: 'v4',
  provider: 'bench',
  modelId: 'decisions',
  supportedUrls: {},
  async doGenerate(options) {
    const last = options.prompt.at(-1);
    if (last?.role === 'user') {
      return {
        content: [
          {
            type: 'tool-call',
            toolCallId: 'c1',
            toolName: 'refund',
            input: '{"orderId":1044,"amount":"35.00"}',
          },
        ],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      };
    }
    return {
      content: [{ type: 'text', text: 'Refund issued.' }],
      finishReason: { unified: 'stop', raw: undefined },
      usage,
      warnings: [],
    };
  },
  async doStream() {
    throw new Error('not used');
  },
};

/**
 * Every real execution leaves its own state key, so a double execution shows up as two keys
 * for one request — the ledger cannot hide it.
 */
const refund = defineTool({
  name: 'refund',
  description: 'Refund an order.',
  input: z.object({ orderId: z.number().int(), amount: z.string() }),
  approval: 'always',
  execute: async (_args, ctx) => {
    await ctx.state.set(`ran:${ctx.requestId}:${process.pid}:${randomBytes(4).toString('hex')}`, 1);
    return 'refunded';
  },
});

export function decisionAgent(store: Store): Agent {
  return createAgent({ name: 'bench', instructions: '', tools: [refund], model: decisionModel, store });
}

/** Real runs of the tool for `ids`, and those that ran more than once, from the tool's own side effects. */
export async function countExecutions(
  store: Store,
  ids: string[],
): Promise<{ runs: number; doubles: number }> {
  const perRequest = new Map<string, number>();
  for (const key of await listKeys(store, 'ran:')) {
    const id = key.split(':')[1]!;
    perRequest.set(id, (perRequest.get(id) ?? 0) + 1);
  }
  let runs = 0;
  let doubles = 0;
  for (const id of ids) {
    const times = perRequest.get(id) ?? 0;
    runs += times;
    if (times > 1) doubles += 1;
  }
  return { runs, doubles };
}

async function listKeys(store: Store, prefix: string): Promise<string[]> {
  const sqlitePath = (store as { path?: string }).path;
  if (!sqlitePath) throw new Error('doubleExecutions needs the SQLite store');
  const { DatabaseSync } = await import('node:sqlite');
  const db = new DatabaseSync(sqlitePath, { readOnly: true });
  const rows = db
    .prepare("SELECT key FROM state WHERE namespace = 'bench' AND key LIKE ? || '%'")
    .all(prefix);
  db.close();
  return rows.map((row) => String(row.key));
}
