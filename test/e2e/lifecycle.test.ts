import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';
import { startScriptedOpenAIServer } from '../helpers/scripted-openai-server.ts';

type Turn = { status: string; reply: string | null; approvals: Array<{ id: string; expiresAt: string }> };
type ErrorOut = { error: { code: string; message: string } };

const dbPath = (store: string) => store.slice('sqlite:'.length);

describe('approval lifecycle across processes', () => {
  let server: Awaited<ReturnType<typeof startScriptedOpenAIServer>>;
  beforeAll(async () => {
    server = await startScriptedOpenAIServer();
  });
  afterAll(async () => {
    await server.close();
  });
  const envFor = (store = tempStore()) => ({
    COUNTERSIGN_STORE: store,
    COUNTERSIGN_MODEL: 'openai-compatible:scripted',
    OPENAI_BASE_URL: server.url,
  });
  const propose = async (env: Record<string, string>, session = 's') => {
    const run = await runCli(
      ['chat', '--as', 'backend', session, 'Please cancel my order 1044.', '--user', 'c-100', '--json'],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    return (run.json as Turn).approvals[0]!.id;
  };

  it('approve racing reject: exactly one decision, at most one execution', async () => {
    for (let round = 0; round < 3; round++) {
      const env = envFor();
      const id = await propose(env);
      const runs = await Promise.all([
        runCli(['approve', id, '--as', 'alice', '--json'], env),
        runCli(['reject', id, '--reason', 'No.', '--as', 'bob', '--json'], env),
        runCli(['approve', id, '--as', 'carol', '--json'], env),
        runCli(['reject', id, '--reason', 'No.', '--as', 'dave', '--json'], env),
      ]);
      expect(runs.filter((run) => run.code === 0)).toHaveLength(1);
      for (const loser of runs.filter((run) => run.code !== 0))
        expect((loser.json as ErrorOut).error.code).toBe('ALREADY_DECIDED');
      const shown = (await runCli(['show', id, '--json'], env)).json as { status: string };
      const executions = (await runCli(['executions', '--json'], env)).json as unknown[];
      expect(executions.length).toBe(shown.status === 'approved' ? 1 : 0);
    }
  });

  it('a decision racing a new chat message: either the call ran or it was moved on — never both, never wedged', async () => {
    for (let round = 0; round < 3; round++) {
      const env = envFor();
      const id = await propose(env);
      const [approve, chat] = await Promise.all([
        runCli(['approve', id, '--as', 'alice', '--json'], env),
        runCli(
          ['chat', '--as', 'backend', 's', "What's the status of order 1044?", '--user', 'c-100', '--json'],
          env,
        ),
      ]);
      expect(chat.code, chat.stderr).toBe(0);
      const shown = (await runCli(['show', id, '--json'], env)).json as {
        status: string;
        decision: { kind: string };
      };
      const executions = (await runCli(['executions', '--json'], env)).json as unknown[];
      if (approve.code === 0) {
        expect(shown.status).toBe('approved');
        expect(executions).toHaveLength(1);
      } else {
        expect((approve.json as ErrorOut).error.code).toBe('ALREADY_DECIDED');
        expect(shown.decision.kind).toBe('moved-on');
        expect(executions).toHaveLength(0);
      }
      expect((await runCli(['pending', '--json'], env)).json).toEqual([]);
    }
  });

  it('one 503 from the model is retried: the approval completes the turn', async () => {
    const env = envFor();
    const id = await propose(env);
    const before = server.requests.length;
    server.fail(1, 503);
    const approve = await runCli(['approve', id, '--json'], env);
    expect(approve.code, approve.stdout).toBe(0);
    expect((approve.json as Turn).reply).toContain('1044');
    // At least the failed try and the retry (processes of a timed-out earlier test may add more).
    expect(server.requests.length - before).toBeGreaterThanOrEqual(2);
  });

  it('a failed model call after the execution keeps everything: resume continues without rerun or re-ask', async () => {
    const env = envFor();
    const id = await propose(env);
    // Every try of the default retry (three) fails.
    server.fail(3, 503);
    const approve = await runCli(['approve', id, '--json'], env);
    expect(approve.code).not.toBe(0);
    expect((approve.json as ErrorOut).error.code).toBe('MODEL_ERROR');
    expect((approve.json as ErrorOut).error.message).toContain('countersign resume s');
    expect((await runCli(['executions', '--json'], env)).json).toMatchObject([
      { requestId: id, status: 'succeeded' },
    ]);
    expect((await runCli(['pending', '--json'], env)).json).toEqual([]);

    const resumed = await runCli(['resume', 's', '--json'], env);
    expect(resumed.code, resumed.stdout).toBe(0);
    expect((resumed.json as Turn).reply).toContain('1044');
    expect((await runCli(['executions', '--json'], env)).json).toHaveLength(1);
  });

  it('a failed model call is also continued by the next chat message', async () => {
    const env = envFor();
    const id = await propose(env);
    server.fail(3, 500);
    expect((await runCli(['approve', id, '--json'], env)).code).not.toBe(0);
    const next = await runCli(
      ['chat', '--as', 'backend', 's', "What's the status of order 1044?", '--user', 'c-100', '--json'],
      env,
    );
    expect(next.code, next.stdout).toBe(0);
    expect((next.json as Turn).reply).toContain('Cancelled');
    expect((await runCli(['executions', '--json'], env)).json).toHaveLength(1);
  });

  it('expiry: COUNTERSIGN_APPROVAL_TTL, EXPIRED on approve, never pending, the model is told, `expire` sweeps', async () => {
    const env = { ...envFor(), COUNTERSIGN_APPROVAL_TTL: '1s' };
    const first = await propose(env, 'a');
    const second = await propose(env, 'b');
    // A workflow request in the same store: the same TTL, the same sweep.
    const started = await runCli(
      ['run', 'start', '--as', 'backend', 'refund', '1043', '--run', 'wf-exp', '--json'],
      env,
    );
    const workflowRequest = (started.json as { requests: Array<{ id: string; expiresAt: string }> })
      .requests[0]!;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect((await runCli(['pending', '--json'], env)).json).toEqual([]);
    const late = await runCli(['approve', first, '--json'], env);
    expect((late.json as ErrorOut).error.code).toBe('EXPIRED');
    const before = server.requests.length;
    const resumed = await runCli(['resume', 'a', '--json'], env);
    expect((resumed.json as Turn).status).toBe('completed');
    expect(JSON.stringify(server.requests.slice(before))).toContain('expired without a decision');

    const lateAnswer = await runCli(
      ['run', 'respond', 'wf-exp', workflowRequest.id, '{"approved": true, "note": "late"}', '--json'],
      env,
    );
    expect((lateAnswer.json as ErrorOut).error.code).toBe('EXPIRED');

    const swept = await runCli(['expire', '--json'], env);
    expect(swept.json).toEqual({
      expired: [second],
      workflowRequests: [
        {
          run: 'wf-exp',
          workflow: 'refund',
          requestId: workflowRequest.id,
          port: 'manager-approval',
          expiresAt: workflowRequest.expiresAt,
        },
      ],
    });
    expect(
      ((await runCli(['run', 'resume', 'wf-exp', '--json'], env)).json as { status: string }).status,
    ).toBe('expired');
    const trail = (await runCli(['audit', '--session', 'wf.wf-exp', '--json'], env)).json as Array<{
      kind: string;
      actor: string;
    }>;
    expect(trail.map((entry) => [entry.kind, entry.actor])).toEqual([
      ['request.raised', 'refund'],
      ['request.expired', 'countersign'],
    ]);
    expect((await runCli(['audit', '--verify', '--json'], env)).json).toMatchObject({ ok: true });
    expect(((await runCli(['show', second, '--json'], env)).json as { status: string }).status).toBe(
      'expired',
    );
    expect((await runCli(['executions', '--json'], env)).json).toEqual([]);
  });

  it('the audit trail records each step and --verify finds an edited, deleted or reordered entry', async () => {
    const store = tempStore();
    const env = envFor(store);
    const id = await propose(env);
    await runCli(['approve', id, '--as', 'alice', '--json'], env);
    const entries = (await runCli(['audit', '--json'], env)).json as Array<{
      seq: number;
      kind: string;
      actor: string;
    }>;
    expect(entries.map((e) => e.kind)).toEqual([
      'request.raised',
      'request.decided',
      'execution.started',
      'execution.finished',
    ]);
    expect(entries[1]).toMatchObject({ actor: 'alice' });
    expect((await runCli(['audit', '--verify', '--json'], env)).json).toMatchObject({ ok: true, entries: 4 });

    const db = new DatabaseSync(dbPath(store));
    db.prepare("UPDATE audit SET actor = 'mallory' WHERE seq = 2").run();
    db.close();
    const edited = await runCli(['audit', '--verify', '--json'], env);
    expect(edited.code).not.toBe(0);
    expect(edited.json).toMatchObject({ ok: false, brokenAt: 2 });

    const store2 = tempStore();
    const env2 = envFor(store2);
    await runCli(['approve', await propose(env2), '--json'], env2);
    const db2 = new DatabaseSync(dbPath(store2));
    db2.prepare('DELETE FROM audit WHERE seq = 3').run();
    db2.close();
    expect((await runCli(['audit', '--verify', '--json'], env2)).json).toMatchObject({
      ok: false,
      brokenAt: 4,
    });

    const store3 = tempStore();
    const env3 = envFor(store3);
    await runCli(['approve', await propose(env3), '--json'], env3);
    const db3 = new DatabaseSync(dbPath(store3));
    db3.exec(
      'UPDATE audit SET seq = 100 WHERE seq = 2; UPDATE audit SET seq = 2 WHERE seq = 3; UPDATE audit SET seq = 3 WHERE seq = 100;',
    );
    db3.close();
    expect((await runCli(['audit', '--verify', '--json'], env3)).json).toMatchObject({
      ok: false,
      brokenAt: 2,
    });
  });

  it('integrity: arguments edited before the decision are flagged and cannot be approved; nothing runs', async () => {
    const store = tempStore();
    const env = envFor(store);
    const id = await propose(env);
    const db = new DatabaseSync(dbPath(store));
    db.prepare(`UPDATE approvals SET args_json = '{"orderId":1043}' WHERE id = ?`).run(id);
    db.close();
    const shown = (await runCli(['show', id, '--json'], env)).json as { integrity: string; args: unknown };
    expect(shown).toMatchObject({ integrity: 'mismatch', args: { orderId: 1043 } });
    const run = await runCli(['approve', id, '--json'], env);
    expect(run.code).not.toBe(0);
    expect((run.json as ErrorOut).error.code).toBe('INTEGRITY_VIOLATION');
    const entries = (await runCli(['audit', '--json'], env)).json as Array<{ kind: string }>;
    expect(entries.map((e) => e.kind)).toContain('tamper.refused');
    expect((await runCli(['executions', '--json'], env)).json).toEqual([]);
    // The session is not wedged: the next message answers the request as moved on.
    const next = await runCli(
      ['chat', '--as', 'backend', 's', "What's the status of order 1044?", '--user', 'c-100', '--json'],
      env,
    );
    expect((next.json as Turn).reply).toContain('Processing');
  });

  it('integrity: arguments edited after the decision, before the run: refused at execution, audited, nothing runs', async () => {
    const store = tempStore();
    const env = envFor(store);
    const id = await propose(env);
    const crashed = await runCli(['approve', id, '--json'], {
      ...env,
      COUNTERSIGN_TEST_FAULT: 'after-decision',
    });
    expect(crashed.signal).toBe('SIGKILL');
    const db = new DatabaseSync(dbPath(store));
    db.prepare(`UPDATE approvals SET args_json = '{"orderId":1043}' WHERE id = ?`).run(id);
    db.close();
    const resumed = await runCli(['resume', 's', '--json'], env);
    expect((resumed.json as ErrorOut).error.code).toBe('INTEGRITY_VIOLATION');
    const executions = (await runCli(['executions', '--json'], env)).json as Array<{ status: string }>;
    expect(executions).toMatchObject([{ status: 'failed' }]);
    const entries = (await runCli(['audit', '--json'], env)).json as Array<{ kind: string }>;
    expect(entries.map((e) => e.kind)).toContain('tamper.refused');
    const next = await runCli(
      ['chat', '--as', 'backend', 's', "What's the status of order 1044?", '--user', 'c-100', '--json'],
      env,
    );
    expect((next.json as Turn).reply).toContain('Processing');
  });

  it('standing approvals from the CLI: --always, rules, rules revoke; refused for cancel_order', async () => {
    const env = { COUNTERSIGN_STORE: tempStore(), COUNTERSIGN_APP: 'kitchen', COUNTERSIGN_MODEL: 'demo' };
    const first = await runCli(
      ['chat', '--as', 'backend', 'k', "We're out of eggs, put a dozen on the list.", '--json'],
      env,
    );
    const id = (first.json as Turn).approvals[0]!.id;
    expect((await runCli(['approve', id, '--always', '--as', 'alice', '--json'], env)).code).toBe(0);
    const rules = (await runCli(['rules', 'k', '--json'], env)).json as Array<{
      id: string;
      tool: string;
      argsHash: null;
    }>;
    expect(rules).toMatchObject([{ tool: 'add_to_shopping_list', argsHash: null }]);
    const second = await runCli(
      ['chat', '--as', 'backend', 'k', 'Put 500 g of flour on the list.', '--json'],
      env,
    );
    expect(second.json).toMatchObject({ status: 'completed', approvals: [] });
    const audit = (await runCli(['audit', '--session', 'k', '--json'], env)).json as Array<{
      kind: string;
      actor: string;
    }>;
    expect(audit.find((e) => e.kind === 'request.auto-approved')?.actor).toBe(`rule:${rules[0]!.id}`);

    expect((await runCli(['rules', 'revoke', rules[0]!.id, '--json'], env)).code).toBe(0);
    expect((await runCli(['rules', 'k', '--json'], env)).json).toEqual([]);
    const third = await runCli(['chat', '--as', 'backend', 'k', 'Put six eggs on the list.', '--json'], env);
    expect((third.json as Turn).status).toBe('awaiting_approval');

    const bookEnv = envFor();
    const cancel = await propose(bookEnv);
    const refused = await runCli(['approve', cancel, '--always', '--json'], bookEnv);
    expect((refused.json as ErrorOut).error.code).toBe('FORBIDDEN');
    expect(((await runCli(['pending', '--json'], bookEnv)).json as unknown[]).length).toBe(1);
  });
});
