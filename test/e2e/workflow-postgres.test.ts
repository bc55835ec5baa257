import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl } from '../helpers/postgres.ts';

type RunView = {
  run: string;
  status: string;
  checkpoint: string;
  requests: Array<{ id: string; port: string; data: unknown }>;
  outputs: unknown[];
};
type ErrorOut = { error: { code: string; message: string } };

const pg = await postgresForTests();

/** Workflow runs on the shared store: start, respond and inspect are each a separate process. */
describe.skipIf(pg === null)('refund workflow from the CLI on PostgreSQL', () => {
  const schema = freshSchema('wf_cli');
  const env = { COUNTERSIGN_STORE: storeUrl(schema) };

  afterAll(async () => {
    await dropSchema(schema);
  });

  async function ok<T>(args: string[]): Promise<T> {
    const run = await runCli([...args, '--json'], env);
    expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(0);
    return run.json as T;
  }

  it('start waits for the manager; respond in another process completes it, once', async () => {
    const started = await ok<RunView>(['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'r1']);
    expect(started).toMatchObject({ run: 'r1', status: 'awaiting_input', outputs: [] });
    expect(started.requests).toEqual([
      expect.objectContaining({
        port: 'manager-approval',
        data: { orderId: 1040, amount: 35, reason: 'Damaged cover reported by customer' },
      }),
    ]);
    const id = started.requests[0]!.id;

    const answered = await ok<RunView>([
      'run',
      'respond',
      'r1',
      id,
      '{"approved": true, "note": "Approved, photo checked."}',
      '--as',
      'mona',
    ]);
    expect(answered).toMatchObject({
      status: 'completed',
      requests: [],
      outputs: ['Refund issued: 35.00 for order 1040. Manager note: Approved, photo checked.'],
    });

    const again = await runCli(
      ['run', 'respond', 'r1', id, '{"approved": false, "note": "no"}', '--json'],
      env,
    );
    expect(again.code).not.toBe(0);
    expect((again.json as ErrorOut).error.code).toBe('ALREADY_DECIDED');
    expect((again.json as ErrorOut).error.message).toContain('answered by mona');

    expect(await ok<unknown[]>(['runs'])).toMatchObject([
      { run: 'r1', workflow: 'refund', status: 'completed' },
    ]);
    expect(await ok<unknown[]>(['run', 'history', 'r1'])).toHaveLength(3);

    // The request and the one answer that won are on the store's chain, under the run.
    const trail = await ok<Array<{ kind: string; actor: string; requestId: string }>>([
      'audit',
      '--session',
      'wf.r1',
    ]);
    expect(trail.map((entry) => [entry.kind, entry.actor, entry.requestId])).toEqual([
      ['request.raised', 'refund', id],
      ['request.decided', 'mona', id],
    ]);
    expect(await ok(['audit', '--verify'])).toMatchObject({ ok: true });
  });

  it('an answer after the request expired is EXPIRED; expire records it once, and resume ends the run expired', async () => {
    const ttlEnv = { ...env, COUNTERSIGN_APPROVAL_TTL: '1s' };
    const started = await runCli(
      ['run', 'start', '--as', 'backend', 'refund', '1043', '--run', 'r2', '--json'],
      ttlEnv,
    );
    const id = (started.json as RunView).requests[0]!.id;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const late = await runCli(
      ['run', 'respond', 'r2', id, '{"approved": true, "note": "late"}', '--json'],
      env,
    );
    expect((late.json as ErrorOut).error.code).toBe('EXPIRED');
    expect(await ok(['expire'])).toMatchObject({ workflowRequests: [{ run: 'r2', requestId: id }] });
    expect(await ok(['expire'])).toMatchObject({ workflowRequests: [] });
    expect(await ok<RunView>(['run', 'resume', 'r2'])).toMatchObject({ status: 'expired', outputs: [] });
    const trail = await ok<Array<{ kind: string }>>(['audit', '--session', 'wf.r2']);
    expect(trail.map((entry) => entry.kind)).toEqual(['request.raised', 'request.expired']);
    expect(await ok(['audit', '--verify'])).toMatchObject({ ok: true });
  });
});
