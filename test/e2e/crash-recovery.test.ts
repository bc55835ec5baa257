import { describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';

type Turn = {
  status: string;
  reply: string | null;
  approvals: Array<{ id: string }>;
  unknown: Array<{ requestId: string }>;
};
type Execution = { requestId: string; status: string; args: unknown };

/**
 * Crash points: the approving process is killed with SIGKILL at each boundary (through the
 * test-only fault hook, not timing), then a new process continues the session. The kitchen's
 * add_to_shopping_list is not idempotent — a second run would put eggs on the list twice —
 * so it shows the "unknown, ask a person" path; the bookstore's cancel_order is idempotent.
 */
describe('executed at most once through crashes (separate processes, SIGKILL)', () => {
  const kitchen = () => ({
    COUNTERSIGN_STORE: tempStore(),
    COUNTERSIGN_APP: 'kitchen',
    COUNTERSIGN_MODEL: 'demo',
  });

  async function proposeEggs(env: Record<string, string>): Promise<string> {
    const run = await runCli(
      ['chat', '--as', 'backend', 'k', "We're out of eggs, put a dozen on the list.", '--json'],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    return (run.json as Turn).approvals[0]!.id;
  }

  async function approveAndCrash(env: Record<string, string>, id: string, point: string): Promise<void> {
    const run = await runCli(['approve', id, '--json'], { ...env, COUNTERSIGN_TEST_FAULT: point });
    expect(run.signal).toBe('SIGKILL');
  }

  async function eggsOnList(env: Record<string, string>): Promise<number> {
    const chat = await runCli(
      ['chat', '--as', 'backend', 'reader', "What's on my shopping list?", '--json'],
      env,
    );
    const reply = (chat.json as Turn).reply ?? '';
    return (reply.match(/eggs/g) ?? []).length;
  }

  async function executions(env: Record<string, string>): Promise<Execution[]> {
    return (await runCli(['executions', '--json'], env)).json as Execution[];
  }

  it('after the decision commits: the next process runs the call once', async () => {
    const env = kitchen();
    const id = await proposeEggs(env);
    await approveAndCrash(env, id, 'after-decision');
    expect(await executions(env)).toEqual([]);
    const resumed = await runCli(['resume', 'k', '--json'], env);
    expect((resumed.json as Turn).status).toBe('completed');
    expect(await executions(env)).toMatchObject([{ requestId: id, status: 'succeeded' }]);
    expect(await eggsOnList(env)).toBe(1);
    // The approval was not lost and is not asked again.
    expect((await runCli(['pending', '--json'], env)).json).toEqual([]);
  });

  it('after "started", before the tool ran: outcome unknown, surfaced, reconciled by a person — never rerun', async () => {
    const env = kitchen();
    const id = await proposeEggs(env);
    await approveAndCrash(env, id, 'after-started');
    const resumed = await runCli(['resume', 'k', '--json'], env);
    const turn = resumed.json as Turn;
    expect(turn.status).toBe('awaiting_reconciliation');
    expect(turn.unknown.map((u) => u.requestId)).toEqual([id]);
    expect(await executions(env)).toMatchObject([{ requestId: id, status: 'unknown' }]);
    // A second resume still refuses to guess.
    expect(((await runCli(['resume', 'k', '--json'], env)).json as Turn).status).toBe(
      'awaiting_reconciliation',
    );
    expect(await eggsOnList(env)).toBe(0);
    // A new message cannot slip past it: refused, with what to do, and not stored.
    const chat = await runCli(['chat', '--as', 'backend', 'k', 'Put six eggs on the list.', '--json'], env);
    expect((chat.json as { error: { code: string } }).error.code).toBe('OUTCOME_UNKNOWN');

    const settled = await runCli(
      ['reconcile', id, '--failed', '--result', 'Checked the list: not added.', '--json'],
      env,
    );
    expect((settled.json as Turn).status).toBe('completed');
    expect(await executions(env)).toMatchObject([
      { requestId: id, status: 'failed', result: 'Checked the list: not added.' },
    ]);
    expect(await eggsOnList(env)).toBe(0);
    const again = await runCli(['reconcile', id, '--succeeded', '--json'], env);
    expect((again.json as { error: { code: string } }).error.code).toBe('ALREADY_DECIDED');
  });

  it('reconcile refuses a call not yet marked unknown (it may still be running)', async () => {
    const env = kitchen();
    const id = await proposeEggs(env);
    await approveAndCrash(env, id, 'after-started');
    const early = await runCli(['reconcile', id, '--failed', '--json'], env);
    expect((early.json as { error: { code: string } }).error.code).toBe('INVALID_INPUT');
    expect(await executions(env)).toMatchObject([{ requestId: id, status: 'started' }]);
  });

  it('after the tool ran, before its result committed: unknown, the tool ran exactly once', async () => {
    const env = kitchen();
    const id = await proposeEggs(env);
    await approveAndCrash(env, id, 'after-tool');
    expect(await eggsOnList(env)).toBe(1);
    const turn = (await runCli(['resume', 'k', '--json'], env)).json as Turn;
    expect(turn.status).toBe('awaiting_reconciliation');
    const settled = await runCli(
      ['reconcile', id, '--succeeded', '--result', 'Eggs are on the list.', '--json'],
      env,
    );
    expect((settled.json as Turn).status).toBe('completed');
    expect(await eggsOnList(env)).toBe(1);
  });

  it('after the result committed, before the model was told: the stored result is used, no rerun', async () => {
    const env = kitchen();
    const id = await proposeEggs(env);
    await approveAndCrash(env, id, 'after-result');
    expect(await executions(env)).toMatchObject([{ requestId: id, status: 'succeeded' }]);
    const turn = (await runCli(['resume', 'k', '--json'], env)).json as Turn;
    expect(turn.status).toBe('completed');
    expect(turn.reply).toContain('eggs');
    expect(await eggsOnList(env)).toBe(1);
  });

  it('after the tool results committed, before the model call: resume only calls the model', async () => {
    const env = kitchen();
    const id = await proposeEggs(env);
    await approveAndCrash(env, id, 'after-results-commit');
    const turn = (await runCli(['resume', 'k', '--json'], env)).json as Turn;
    expect(turn.status).toBe('completed');
    expect(turn.reply).toContain('eggs');
    expect(await executions(env)).toMatchObject([{ requestId: id, status: 'succeeded' }]);
    expect(await eggsOnList(env)).toBe(1);
  });

  it('an idempotent tool whose outcome is unknown runs again with the same idempotency key', async () => {
    const env = { COUNTERSIGN_STORE: tempStore(), COUNTERSIGN_MODEL: 'demo' };
    const chat = await runCli(
      ['chat', '--as', 'backend', 'b', 'Please cancel my order 1044.', '--user', 'c-100', '--json'],
      env,
    );
    const id = (chat.json as Turn).approvals[0]!.id;
    await approveAndCrash(env, id, 'after-tool');
    const turn = (await runCli(['resume', 'b', '--json'], env)).json as Turn;
    expect(turn.status).toBe('completed');
    expect(turn.reply).toContain('1044');
    const list = (await runCli(['executions', '--json'], env)).json as Array<{
      status: string;
      idempotencyKey: string;
    }>;
    expect(list).toMatchObject([{ status: 'succeeded', idempotencyKey: `countersign:${id}` }]);
  });
});
