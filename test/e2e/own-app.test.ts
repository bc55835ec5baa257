import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';

type Turn = { status: string; reply: string | null; approvals: Array<{ id: string; args: unknown }> };

describe('COUNTERSIGN_APP with a tool of your own, offline on the demo model', () => {
  it('the demo model calls it by name; the call waits, is approved and runs once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-own-app-'));
    const index = resolve(import.meta.dirname, '../../src/index.ts');
    writeFileSync(
      join(dir, 'my-app.ts'),
      // A plain JSON Schema: the temp dir has no node_modules to find zod in.
      `import { createAgent, defineTool } from ${JSON.stringify(index)};

const wire = defineTool({
  name: 'send_payment',
  description: 'Send a payment.',
  input: {
    type: 'object',
    properties: { to: { type: 'string' }, cents: { type: 'integer', minimum: 1 } },
    required: ['to', 'cents'],
    additionalProperties: false,
  },
  standing: false,
  execute: (args, ctx) => ({ ok: true, ...args, key: ctx.idempotencyKey }),
});

export const agents = [createAgent({ name: 'payments', instructions: 'You send payments.', tools: [wire] })];
`,
    );
    const env = { COUNTERSIGN_STORE: tempStore(), COUNTERSIGN_APP: join(dir, 'my-app.ts') };
    const chat = await runCli(
      ['chat', '--as', 'backend', 'p1', 'use send_payment with to bob cents 500', '--json'],
      env,
    );
    expect(chat.code, chat.stderr).toBe(0);
    const turn = chat.json as Turn;
    expect(turn.status).toBe('awaiting_approval');
    expect(turn.approvals[0]?.args).toEqual({ to: 'bob', cents: 500 });

    const bad = await runCli(
      ['chat', '--as', 'backend', 'p2', 'use send_payment with to bob cents -5', '--json'],
      env,
    );
    expect((bad.json as Turn).status).toBe('completed');
    expect((bad.json as Turn).reply).toMatch(/cents/);

    const approved = await runCli(['approve', turn.approvals[0]!.id, '--json'], env);
    expect(approved.code, approved.stderr).toBe(0);
    expect((approved.json as Turn).reply).toContain('send_payment finished');
    const executions = (await runCli(['executions', '--json'], env)).json as unknown[];
    expect(executions).toMatchObject([{ tool: 'send_payment', status: 'succeeded' }]);
  }, 120_000);
});
