import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const index = resolve(import.meta.dirname, '../src/index.ts');

/** The packages a script loaded, seen through a resolve hook in a fresh process. */
function loaded(body: string): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve(specifier, context, next) { seen.push(specifier); return next(specifier, context); } });
    const cs = await import(process.argv[1]);
    ${body}
    console.log(JSON.stringify([...new Set(seen.filter((s) => /^(ajv|@ai-sdk\\/)/.test(s)))]));
  `;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script, index], { encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '[]') as string[];
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

  it('a JSON Schema tool loads ajv, a failed model call @ai-sdk/provider', () => {
    const seen = loaded(`
      cs.defineTool({ name: 't', description: 'd', input: { type: 'object' }, execute: () => 1 });
      const failing = { ...cs.createDemoModel(), doGenerate: async () => { throw new Error('no'); } };
      const agent = cs.createAgent({ name: 'a', instructions: 'i', tools: [], model: failing, store: cs.createMemoryStore() });
      await agent.chat('s', 'hello').catch(() => undefined);
    `);
    expect(seen).toEqual(expect.arrayContaining(['ajv', 'ajv-formats', '@ai-sdk/provider']));
  });
});
