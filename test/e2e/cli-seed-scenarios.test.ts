import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';
import { startScriptedOpenAIServer } from '../helpers/scripted-openai-server.ts';

type Approval = {
  id: string;
  session: string;
  tool: string;
  args: unknown;
  effect: string;
  createdAt: string;
  expiresAt: string;
};
type Turn = { session: string; status: string; reply: string | null; approvals: Approval[] };

/**
 * The seed scenarios end to end: every step is a separate `countersign` process on one
 * SQLite file, and the model is a scripted server speaking OpenAI Chat Completions on
 * loopback, so the real provider package is on the path.
 */
describe('countersign CLI across processes (SQLite + OpenAI-compatible model)', () => {
  let server: Awaited<ReturnType<typeof startScriptedOpenAIServer>>;
  /** The bookstore agent as it was before support desks kept requests waiting: 'reject'. */
  let movesOnApp = '';
  beforeAll(async () => {
    server = await startScriptedOpenAIServer();
    const dir = dirname(tempStore().slice('sqlite:'.length));
    movesOnApp = join(dir, 'moves-on-app.ts');
    const app = resolve(import.meta.dirname, '../../examples/bookstore/app.ts');
    const src = resolve(import.meta.dirname, '../../src/index.ts');
    writeFileSync(
      movesOnApp,
      `import { bookstoreAgent } from ${JSON.stringify(app)};
import { createAgent } from ${JSON.stringify(src)};
export const agents = [createAgent({ ...bookstoreAgent.options, onNewMessage: 'reject' })];
`,
    );
  });
  afterAll(async () => {
    await server.close();
  });

  const envFor = (store: string) => ({
    COUNTERSIGN_STORE: store,
    COUNTERSIGN_MODEL: 'openai-compatible:scripted',
    OPENAI_BASE_URL: server.url,
  });

  const chat = async (env: Record<string, string>, session: string, text: string, user = 'c-100') => {
    const run = await runCli(['chat', '--as', 'backend', session, text, '--user', user, '--json'], env);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    return run.json as Turn;
  };

  it('approves in a new process: the stored call runs and the reply is printed', async () => {
    const env = envFor(tempStore());
    const first = await chat(env, 'seed-1', 'Please cancel my order 1044.');
    expect(first.status).toBe('awaiting_approval');
    expect(first.approvals[0]).toMatchObject({
      tool: 'cancel_order',
      args: { orderId: 1044 },
      session: 'seed-1',
    });
    expect(Object.keys(first.approvals[0]!)).toEqual(
      expect.arrayContaining(['id', 'session', 'tool', 'args', 'effect', 'createdAt', 'expiresAt']),
    );

    const pending = (await runCli(['pending', '--json'], env)).json as Approval[];
    expect(pending.map((p) => p.id)).toEqual([first.approvals[0]!.id]);

    const approved = await runCli(['approve', first.approvals[0]!.id, '--as', 'alice', '--json'], env);
    expect(approved.code).toBe(0);
    const turn = approved.json as Turn;
    expect(turn.status).toBe('completed');
    expect(turn.reply).toContain('1044');

    const executions = (await runCli(['executions', '--json'], env)).json as Array<Record<string, unknown>>;
    expect(executions).toEqual([
      expect.objectContaining({
        requestId: first.approvals[0]!.id,
        tool: 'cancel_order',
        args: { orderId: 1044 },
        status: 'succeeded',
      }),
    ]);
    expect(Object.keys(executions[0]!)).toEqual(
      expect.arrayContaining([
        'requestId',
        'session',
        'tool',
        'args',
        'status',
        'result',
        'startedAt',
        'finishedAt',
      ]),
    );
    const shown = (await runCli(['show', first.approvals[0]!.id, '--json'], env)).json as {
      decision: { by: string; verdict: string };
    };
    expect(shown.decision).toMatchObject({ by: 'alice', verdict: 'approved' });
    expect((await runCli(['pending', '--json'], env)).json).toEqual([]);
  });

  it('rejects with a reason that reaches the model', async () => {
    const env = envFor(tempStore());
    const first = await chat(env, 'seed-2', 'Please cancel my order 1044.');
    const reason = 'Support must call the customer before cancelling. Do not retry.';
    const before = server.requests.length;
    const run = await runCli(['reject', first.approvals[0]!.id, '--reason', reason, '--json'], env);
    expect(run.code).toBe(0);
    const sent = JSON.stringify(server.requests.slice(before));
    expect(sent).toContain(reason);
    expect((run.json as Turn).reply).toContain(reason);
    expect((await runCli(['executions', '--json'], env)).json).toEqual([]);
  });

  it('a decision carries no other call: there is no way to pass arguments with it', async () => {
    const env = envFor(tempStore());
    const first = await chat(env, 'seed-3', 'Please cancel my order 1044.');
    const tampered = await runCli(
      ['approve', first.approvals[0]!.id, '--args', '{"orderId":1043}', '--json'],
      env,
    );
    expect(tampered.code).not.toBe(0);
    expect((tampered.json as { error: { code: string } }).error.code).toBe('INVALID_INPUT');
    // The request is still waiting, untouched, and approving it runs 1044 — never 1043.
    await runCli(['approve', first.approvals[0]!.id, '--json'], env);
    const executions = (await runCli(['executions', '--json'], env)).json as Array<{ args: unknown }>;
    expect(executions.map((e) => e.args)).toEqual([{ orderId: 1044 }]);
  });

  it('eight concurrent approvals of one request: one wins, seven are told who decided, one execution', async () => {
    const env = envFor(tempStore());
    const first = await chat(env, 'seed-4', 'Please cancel my order 1044.');
    const runs = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        runCli(['approve', first.approvals[0]!.id, '--as', `approver-${i}`, '--json'], env),
      ),
    );
    const winners = runs.filter((run) => run.code === 0);
    const losers = runs.filter((run) => run.code !== 0);
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(7);
    for (const loser of losers) {
      const error = (loser.json as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('ALREADY_DECIDED');
      expect(error.message).toMatch(/approved by approver-\d/);
    }
    expect(((await runCli(['executions', '--json'], env)).json as unknown[]).length).toBe(1);
  });

  it('mixed read and write: the read is held, runs with the decision, and its result reaches the model', async () => {
    const env = envFor(tempStore());
    const first = await chat(env, 'seed-5', "What's the status of order 1043? And cancel order 1044.");
    expect(first.approvals.map((a) => a.tool)).toEqual(['cancel_order']);
    const before = server.requests.length;
    const run = await runCli(['reject', first.approvals[0]!.id, '--reason', 'Not today.', '--json'], env);
    const sent = JSON.stringify(server.requests.slice(before));
    expect(sent).toContain('Order 1043 is Shipped');
    expect(sent).toContain('Not today.');
    expect((run.json as Turn).status).toBe('completed');
  });

  it('a new message while a request waits moves on: rejected with a reason, in the same run (an agent with onNewMessage reject)', async () => {
    const env = { ...envFor(tempStore()), COUNTERSIGN_APP: movesOnApp };
    const first = await chat(env, 'seed-6', 'Please cancel my order 1044.');
    const next = await chat(env, 'seed-6', "What's the status of order 1044?");
    expect(next.status).toBe('completed');
    expect(next.reply).toContain('Processing');
    const shown = (await runCli(['show', first.approvals[0]!.id, '--json'], env)).json as {
      decision: { kind: string };
    };
    expect(shown.decision.kind).toBe('moved-on');
    const late = await runCli(['approve', first.approvals[0]!.id, '--json'], env);
    expect((late.json as { error: { code: string } }).error.code).toBe('ALREADY_DECIDED');
  });

  it("the bookstore keeps the request waiting through a new message ('keep'): the model says so, and the outcome follows the decision", async () => {
    const env = envFor(tempStore());
    const first = await chat(env, 'seed-6k', 'Please cancel my order 1044.');
    const next = await chat(env, 'seed-6k', "What's the status of order 1044?");
    expect(next.status).toBe('awaiting_approval');
    expect(next.reply).toContain('Processing');
    const shown = (await runCli(['show', first.approvals[0]!.id, '--json'], env)).json as { status: string };
    expect(shown.status).toBe('pending');
    const approved = await runCli(['approve', first.approvals[0]!.id, '--as', 'alice', '--json'], env);
    expect(approved.json).toMatchObject({ status: 'completed' });
    expect((approved.json as Turn).reply).toContain('Order 1044 has been cancelled.');
  });

  it("another customer's order is refused by the tool's authorization, never asked about", async () => {
    const env = envFor(tempStore());
    const turn = await chat(env, 'seed-7', 'Please cancel my order 1050.');
    expect(turn.status).toBe('completed');
    expect(turn.approvals).toEqual([]);
    expect(turn.reply).toContain('not one of this customer');
    const other = await runCli(
      ['chat', '--as', 'backend', 'seed-7', 'hello', '--user', 'c-200', '--json'],
      env,
    );
    expect((other.json as { error: { code: string } }).error.code).toBe('FORBIDDEN');
  });

  it('invalid model arguments become a tool error the model corrects', async () => {
    const env = envFor(tempStore());
    const before = server.requests.length;
    const turn = await chat(env, 'seed-8', 'Please cancel my order 1044 [[bad-args]]');
    expect(JSON.stringify(server.requests.slice(before))).toContain('Invalid arguments for cancel_order');
    expect(turn.approvals).toHaveLength(1);
    expect(turn.approvals[0]!.args).toEqual({ orderId: 1044 });
  });

  it('exports a waiting session, imports it into another store, and approves it there', async () => {
    const source = envFor(tempStore());
    const first = await chat(source, 'seed-9', 'Please cancel my order 1044.');
    const file = join(tempStore().slice('sqlite:'.length), '..', 'export.json');
    const exported = await runCli(['session', 'export', 'seed-9', '--out', file, '--json'], source);
    expect(exported.code).toBe(0);
    expect((exported.json as { bytes: number }).bytes).toBeLessThanOrEqual(1536);

    const target = envFor(tempStore());
    const imported = await runCli(['session', 'import', file, '--trust-unsigned', '--json'], target);
    expect(imported.json).toMatchObject({
      session: 'seed-9',
      pending: [first.approvals[0]!.id],
      reopened: [],
    });
    const approved = await runCli(['approve', first.approvals[0]!.id, '--json'], target);
    expect((approved.json as Turn).status).toBe('completed');
    const executions = (await runCli(['executions', '--json'], target)).json as Array<{ args: unknown }>;
    expect(executions.map((e) => e.args)).toEqual([{ orderId: 1044 }]);

    const altered = readFileSync(file, 'utf8').replace('{\\"orderId\\":1044}', '{\\"orderId\\":1043}');
    writeFileSync(file, altered);
    const refused = await runCli(
      ['session', 'import', file, '--trust-unsigned', '--json'],
      envFor(tempStore()),
    );
    expect(refused.code).not.toBe(0);
    expect((refused.json as { error: { code: string } }).error.code).toBe('INVALID_INPUT');
  });

  it('errors are JSON with a stable code and a non-zero exit', async () => {
    const env = envFor(tempStore());
    const cases: Array<[string[], string]> = [
      [['approve', 'apr_unknown', '--json'], 'NOT_FOUND'],
      [['show', 'apr_unknown', '--json'], 'NOT_FOUND'],
      [['reject', 'apr_unknown', '--json'], 'INVALID_INPUT'],
      [['frobnicate', '--json'], 'INVALID_INPUT'],
      [['resume', 'no-such-session', '--json'], 'NOT_FOUND'],
    ];
    for (const [args, code] of cases) {
      const run = await runCli(args, env);
      expect(run.code, args.join(' ')).not.toBe(0);
      expect(run.json).toEqual({ error: { code, message: expect.any(String) } });
    }
  });

  it('the interactive console on a support desk: the proposal in full, "y" never decides what you raised, another person does', async () => {
    const env = envFor(tempStore());
    const run = await runCli(
      ['chat', '--as', 'backend', 'console-1', '--user', 'c-100'],
      env,
      'Please cancel my order 1044.\ny\n',
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('tool:    cancel_order');
    expect(run.stdout).toContain('args:    {"orderId":1044}');
    expect(run.stdout).toContain('effect:  Cancel order 1044');
    expect(run.stdout).toContain('Crème Brûlée');
    // Typed twice (after the proposal and after "y"): "y" is neither a decision nor a message.
    expect(
      run.stdout.match(/You \(backend\) raised this request, so someone else must decide it/g),
    ).toHaveLength(2);
    expect(run.stdout).toMatch(
      /still waiting\. Decide later with: npx countersign approve apr_\S+ --as NAME/,
    );
    const pending = (await runCli(['pending', '--json'], env)).json as Approval[];
    expect(pending).toHaveLength(1);
    // The same name from another process is refused too, and so is the customer; nothing runs.
    for (const as of ['backend', 'BACKEND', 'c-100']) {
      const refused = await runCli(['approve', pending[0]!.id, '--as', as, '--json'], env);
      expect(refused.code).toBe(1);
      expect(refused.json).toMatchObject({ error: { code: 'FORBIDDEN' } });
    }
    expect((await runCli(['executions', '--json'], env)).json).toEqual([]);
    const approved = await runCli(['approve', pending[0]!.id, '--as', 'alice', '--json'], env);
    expect(approved.json).toMatchObject({ status: 'completed' });
  });

  it('the interactive console: any other text rejects as moved on and goes to the agent', async () => {
    const env = { ...envFor(tempStore()), COUNTERSIGN_APP: 'kitchen' };
    const run = await runCli(
      ['chat', '--as', 'backend', 'kitchen-1'],
      env,
      "We're out of eggs, put a dozen on the list.\nActually, make that six\ny\n",
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('{"item":"eggs","quantity":"12"}');
    expect(run.stdout).toContain('{"item":"eggs","quantity":"6"}');
    const executions = (await runCli(['executions', '--json'], env)).json as Array<{ args: unknown }>;
    expect(executions.map((e) => e.args)).toEqual([{ item: 'eggs', quantity: '6' }]);
  });

  it('the interactive console asks again on a typo (nothing dropped), and e edits the quantity before approving', async () => {
    const env = { ...envFor(tempStore()), COUNTERSIGN_APP: 'kitchen' };
    const run = await runCli(
      ['chat', '--as', 'backend', 'kitchen-2'],
      env,
      "We're out of eggs, put a dozen on the list.\nys\ne\n6\n",
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('"ys" is not an answer');
    expect(run.stdout).toContain('e = edit quantity');
    const shown = (await runCli(['pending', '--json'], env)).json as unknown[];
    expect(shown).toEqual([]);
    const executions = (await runCli(['executions', '--json'], env)).json as Array<{ args: unknown }>;
    expect(executions.map((e) => e.args)).toEqual([{ item: 'eggs', quantity: '6' }]);
    const audit = (await runCli(['audit', '--json'], env)).json as Array<{
      kind: string;
      data: { edited?: unknown };
    }>;
    expect(audit.find((entry) => entry.kind === 'request.decided')?.data.edited).toMatchObject({
      diff: [{ field: 'quantity', from: '12', to: '6' }],
    });
  });

  it('approve --edit from another process: the edited call runs, a non-editable field is refused', async () => {
    const env = { ...envFor(tempStore()), COUNTERSIGN_APP: 'kitchen' };
    const turn = await chat(env, 'kitchen-3', "We're out of eggs, put a dozen on the list.");
    const id = turn.approvals[0]!.id;
    const refused = await runCli(
      ['approve', id, '--as', 'backend', '--edit', '{"item":"caviar"}', '--json'],
      env,
    );
    expect(refused.code).not.toBe(0);
    expect(refused.json).toMatchObject({ error: { code: 'NOT_EDITABLE' } });
    const bad = await runCli(['approve', id, '--as', 'backend', '--edit', '[6]', '--json'], env);
    expect(bad.json).toMatchObject({ error: { code: 'INVALID_INPUT' } });
    const shown = await runCli(['show', id], env);
    expect(shown.stdout).toContain('editable: quantity');
    const approved = await runCli(
      ['approve', id, '--as', 'backend', '--edit', '{"quantity":"6"}', '--json'],
      env,
    );
    expect(approved.json).toMatchObject({ status: 'completed' });
    const after = await runCli(['show', id], env);
    expect(after.stdout).toContain('ran as:  {"item":"eggs","quantity":"6"} (quantity "12" → "6")');
    const executions = (await runCli(['executions', '--json'], env)).json as Array<{ args: unknown }>;
    expect(executions.map((e) => e.args)).toEqual([{ item: 'eggs', quantity: '6' }]);
  });

  it('COUNTERSIGN_APP can name a module of your own that exports agents', async () => {
    const dir = dirname(tempStore().slice('sqlite:'.length));
    const app = join(dir, 'my-app.ts');
    const src = resolve(import.meta.dirname, '../../src/index.ts');
    writeFileSync(
      app,
      `import { z } from ${JSON.stringify(resolve(import.meta.dirname, '../../node_modules/zod/index.js'))};
import { createAgent, defineTool } from ${JSON.stringify(src)};
const wire = defineTool({ name: 'cancel_order', description: 'Wire money.', input: z.object({ orderId: z.number() }), execute: () => 'sent' });
export const agents = [createAgent({ name: 'custom', instructions: '', tools: [wire] })];
`,
    );
    const env = { ...envFor(tempStore()), COUNTERSIGN_APP: app };
    const turn = await chat(env, 'custom-1', 'Please cancel my order 7.');
    expect(turn.approvals[0]).toMatchObject({ tool: 'cancel_order', args: { orderId: 7 } });
    const bad = await runCli(['pending', '--json'], { ...env, COUNTERSIGN_APP: join(dir, 'missing.ts') });
    expect(
      (
        await runCli(['chat', '--as', 'backend', 'x', 'hi', '--json'], {
          ...env,
          COUNTERSIGN_APP: join(dir, 'missing.ts'),
        })
      ).json,
    ).toMatchObject({
      error: { code: 'CONFIG_ERROR' },
    });
    expect(bad.code).toBe(0);
  });
});
