import { describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';

type RunView = {
  status: string;
  requests: Array<{ id: string; port: string; data: { approval: string; tool: string; args: unknown } }>;
  outputs: Array<{ session: string; reply: string | null }>;
};

/**
 * The bookstore agent inside the `support` workflow, each step its own process on one SQLite
 * file with the offline demo model: the workflow waits on the agent's approval as a request
 * of the run, and the answer goes through the agent's decision path.
 */
describe('an agent inside a workflow, from the CLI', () => {
  it('waits on the approval as a run request; the answer decides the stored call once, audited', async () => {
    const env = { COUNTERSIGN_STORE: tempStore() };
    const input = JSON.stringify({ customer: 'c-100', message: 'Please cancel my order 1044.' });
    const started = await runCli(
      ['run', 'start', '--as', 'backend', 'support', input, '--run', 'help-1', '--json'],
      env,
    );
    expect(started.code, started.stdout + started.stderr).toBe(0);
    const view = started.json as RunView;
    expect(view.status).toBe('awaiting_input');
    expect(view.requests).toMatchObject([
      { port: 'approval', data: { tool: 'cancel_order', args: { orderId: 1044 } } },
    ]);

    // The same call is visible on the agent path, under the id the request carries.
    const pending = (await runCli(['pending', '--json'], env)).json as Array<{ id: string; session: string }>;
    expect(pending).toEqual([
      expect.objectContaining({ id: view.requests[0]!.data.approval, session: 'wf.help-1.assistant' }),
    ]);

    const answered = await runCli(
      ['run', 'respond', 'help-1', view.requests[0]!.id, '{"approved": true}', '--as', 'alice', '--json'],
      env,
    );
    expect(answered.code, answered.stdout + answered.stderr).toBe(0);
    const done = answered.json as RunView;
    expect(done.status).toBe('completed');
    expect(done.outputs[0]?.reply).toMatch(/1044/);

    const again = await runCli(
      ['run', 'respond', 'help-1', view.requests[0]!.id, '{"approved": true}', '--json'],
      env,
    );
    expect((again.json as { error: { code: string } }).error.code).toBe('ALREADY_DECIDED');
    const executions = (await runCli(['executions', '--json'], env)).json as Array<{
      tool: string;
      status: string;
    }>;
    expect(executions).toEqual([expect.objectContaining({ tool: 'cancel_order', status: 'succeeded' })]);
    const audit = (await runCli(['audit', '--json'], env)).json as Array<{ kind: string; actor: string }>;
    expect(audit.filter((entry) => entry.kind === 'request.decided')).toMatchObject([{ actor: 'alice' }]);
    expect((await runCli(['audit', '--verify', '--json'], env)).json).toMatchObject({ ok: true });
  });
});
