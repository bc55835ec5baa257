import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packagesLoaded } from './helpers/loaded-packages.ts';

const index = resolve(import.meta.dirname, '../src/index.ts');

/** The lazily loaded packages a script touched: ajv, the AI SDK helpers, the server's, pg's. */
function loaded(body: string): string[] {
  return packagesLoaded(index, body).filter((name) =>
    /^(ajv|ajv-formats|@ai-sdk\/.*|hono|@hono\/node-server|pg|pg-boss|pg-.*)$/.test(name),
  );
}

describe('dependencies loaded on first use', () => {
  it('a zod agent on the demo model loads neither ajv nor the AI SDK helpers (CLI start-up stays fast)', () => {
    expect(
      loaded(`
        const { z } = await import('zod');
        const tool = cs.defineTool({ name: 't', description: 'd', input: z.object({ a: z.string() }), execute: () => 1 });
        const agent = cs.createAgent({ name: 'a', instructions: 'i', tools: [tool], model: cs.createDemoModel(), store: cs.createMemoryStore() });
        await agent.chat('s', 'hello');
      `),
    ).toEqual([]);
  });

  it('a turn on a SQLite store loads no HTTP server and no PostgreSQL driver', () => {
    expect(
      loaded(`
        const { mkdtempSync } = await import('node:fs');
        const { join } = await import('node:path');
        const { tmpdir } = await import('node:os');
        const store = cs.createSqliteStore({ path: join(mkdtempSync(join(tmpdir(), 'cs-lazy-')), 'store.db') });
        const tool = cs.defineTool({ name: 'cancel_order', description: 'd', input: { type: 'object' }, execute: () => 1 });
        const agent = cs.createAgent({ name: 'a', instructions: 'i', tools: [tool], model: cs.createDemoModel(), store });
        await agent.chat('s', 'hello');
        await store.close();
      `).filter((name) => !name.startsWith('ajv')),
    ).toEqual([]);
  });

  it('a JSON Schema tool loads ajv, a failed model call @ai-sdk/provider', () => {
    const seen = loaded(`
      cs.defineTool({ name: 't', description: 'd', input: { type: 'object' }, execute: () => 1 });
      const failing = { ...cs.createDemoModel(), doGenerate: async () => { throw new Error('no'); } };
      const agent = cs.createAgent({ name: 'a', instructions: 'i', tools: [], model: failing, store: cs.createMemoryStore() });
      await agent.chat('s', 'hello').catch(() => undefined);
    `);
    expect(seen).toEqual(expect.arrayContaining(['ajv', 'ajv-formats', '@ai-sdk/provider']));
  });

  it('opening a PostgreSQL store loads pg then, not before', () => {
    const seen = loaded(`
      await cs.openStore('postgres://nobody@127.0.0.1:1/none').catch(() => undefined);
    `);
    expect(seen).toContain('pg');
  });
});
