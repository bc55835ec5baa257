import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';

/**
 * `claim` and `release`, each its own process on one SQLite file: a claim is the store's, so
 * the next process sees who holds it; deciding needs none.
 */
type View = { id: string; status: string; claim: { by: string; until: string } | null };
type ErrorOut = { error: { code: string; message: string } };

async function ok<T>(args: string[], env: Record<string, string>): Promise<T> {
  const run = await runCli([...args, '--json'], env);
  expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(0);
  return run.json as T;
}

async function refused(args: string[], env: Record<string, string>): Promise<ErrorOut['error']> {
  const run = await runCli([...args, '--json'], env);
  expect(run.code, `${args.join(' ')}: ${run.stdout}`).not.toBe(0);
  return (run.json as ErrorOut).error;
}

describe('claims from the CLI', () => {
  it('claim, see it from another process, refuse another claimer, release; deciding needs no claim', async () => {
    const env = { COUNTERSIGN_STORE: tempStore() };
    const turn = await ok<{ approvals: Array<{ id: string }> }>(
      ['chat', 's1', 'Please cancel my order 1044.', '--user', 'c-100', '--as', 'backend'],
      env,
    );
    const id = turn.approvals[0]!.id;
    const claimed = await ok<View>(['claim', id, '--as', 'alice', '--for', '30m'], env);
    expect(claimed.claim?.by).toBe('alice');
    expect(Date.parse(claimed.claim!.until) - Date.now()).toBeGreaterThan(29 * 60_000);

    const shown = await runCli(['show', id], env);
    expect(shown.stdout).toContain(`claimed: by alice until ${claimed.claim!.until}`);
    expect((await ok<View>(['show', id], env)).claim).toEqual(claimed.claim);

    const other = await refused(['claim', id, '--as', 'bob'], env);
    expect(other.code).toBe('CLAIMED');
    expect(other.message).toContain('claimed by alice until');
    expect((await refused(['release', id, '--as', 'bob'], env)).code).toBe('CLAIMED');
    // The raiser and the customer may not claim, as they may not decide.
    expect((await refused(['claim', id, '--as', 'backend'], env)).code).toBe('FORBIDDEN');
    expect((await refused(['claim', id, '--as', 'c-100'], env)).code).toBe('FORBIDDEN');
    expect((await refused(['claim', id, '--as', 'alice', '--for', '2d'], env)).code).toBe('INVALID_INPUT');
    expect((await refused(['claim', 'apr_nope', '--as', 'alice'], env)).code).toBe('NOT_FOUND');

    const released = await runCli(['release', id, '--as', 'alice'], env);
    expect(released.stdout).toContain(`Released ${id}: nobody holds it.`);
    expect((await ok<View>(['claim', id, '--as', 'alice'], env)).claim?.by).toBe('alice');
    // bob decides what alice holds: a claim never stops a decision.
    const decided = await ok<{ status: string }>(['approve', id, '--as', 'bob'], env);
    expect(decided.status).toBe('completed');
    expect((await refused(['claim', id, '--as', 'bob'], env)).code).toBe('ALREADY_DECIDED');

    const audit = await ok<Array<{ kind: string; actor: string }>>(['audit'], env);
    expect(
      audit.filter((e) => e.kind.startsWith('request.claimed') || e.kind === 'request.released'),
    ).toEqual([
      expect.objectContaining({ kind: 'request.claimed', actor: 'alice' }),
      expect.objectContaining({ kind: 'request.released', actor: 'alice' }),
      expect.objectContaining({ kind: 'request.claimed', actor: 'alice' }),
    ]);
  });

  it('claims a port request like a tool call; a file store of runs keeps no claims and says so', async () => {
    const env = { COUNTERSIGN_STORE: tempStore() };
    const run = await ok<{ requests: Array<{ id: string }> }>(
      ['run', 'start', 'refund', '1040', '--run', 'refund-1040', '--as', 'backend', '--user', 'c-300'],
      env,
    );
    const port = run.requests[0]!.id;
    expect((await ok<View>(['claim', port, '--as', 'mona'], env)).claim?.by).toBe('mona');
    expect((await refused(['claim', port, '--as', 'c-300'], env)).code).toBe('FORBIDDEN');

    const fileEnv = {
      COUNTERSIGN_STORE: `file:${join(mkdtempSync(join(tmpdir(), 'countersign-test-')), 'runs')}`,
    };
    const fileRun = await ok<{ requests: Array<{ id: string }> }>(
      ['run', 'start', 'refund', '1040', '--run', 'refund-1040', '--as', 'backend'],
      fileEnv,
    );
    const kept = await refused(['claim', fileRun.requests[0]!.id, '--as', 'mona'], fileEnv);
    expect(kept.code).toBe('INVALID_INPUT');
    expect(kept.message).toContain('keeps no claims');
  });
});
