import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl } from '../helpers/postgres.ts';

type Turn = { session: string; status: string; reply: string | null; approvals: Array<{ id: string }> };
type ErrorOut = { error: { code: string; message: string } };

const pg = await postgresForTests();

/**
 * The shared store end to end: every step is a separate `countersign` process on one
 * PostgreSQL schema, with the offline demo model.
 */
describe.skipIf(pg === null)('countersign CLI on PostgreSQL', () => {
  const schema = freshSchema('cli');
  const env = { COUNTERSIGN_STORE: storeUrl(schema), COUNTERSIGN_MODEL: 'demo' };

  afterAll(async () => {
    await dropSchema(schema);
  });

  it('eight concurrent approvals of one request: one wins, seven ALREADY_DECIDED, one execution', async () => {
    const chat = await runCli(
      ['chat', '--as', 'backend', 'pg-1', 'Please cancel my order 1044.', '--user', 'c-100', '--json'],
      env,
    );
    expect(chat.code, chat.stderr + chat.stdout).toBe(0);
    const turn = chat.json as Turn;
    expect(turn.status).toBe('awaiting_approval');
    const id = turn.approvals[0]!.id;

    const runs = await Promise.all(
      Array.from({ length: 8 }, (_, i) => runCli(['approve', id, '--as', `approver-${i}`, '--json'], env)),
    );
    const winners = runs.filter((run) => run.code === 0);
    const losers = runs.filter((run) => run.code !== 0);
    expect(winners, runs.map((run) => run.stderr + run.stdout).join('\n')).toHaveLength(1);
    expect((winners[0]!.json as Turn).status).toBe('completed');
    expect((winners[0]!.json as Turn).reply).toContain('1044');
    expect(losers).toHaveLength(7);
    for (const loser of losers) {
      const { error } = loser.json as ErrorOut;
      expect(error.code).toBe('ALREADY_DECIDED');
      expect(error.message).toMatch(/approved by approver-\d/);
    }

    const executions = (await runCli(['executions', '--json'], env)).json as Array<{
      args: unknown;
      status: string;
    }>;
    expect(executions).toEqual([expect.objectContaining({ args: { orderId: 1044 }, status: 'succeeded' })]);
    const verify = await runCli(['audit', '--verify', '--json'], env);
    expect(verify.code).toBe(0);
    expect(verify.json).toMatchObject({ ok: true });
    expect((verify.json as { entries: number }).entries).toBeGreaterThanOrEqual(3);
  });
});
