import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';

/**
 * `pending`, `show`, `approve`, `reject` and `answer` work for both kinds of request, each
 * command its own process: a workflow's port request is listed and decided like a tool call.
 */
type View = { id: string; kind: string; status: string; run: string | null; tool: string };
type ErrorOut = { error: { code: string; message: string } };

const backends: Array<[string, () => string]> = [
  ['sqlite', () => tempStore()],
  ['file', () => `file:${join(mkdtempSync(join(tmpdir(), 'countersign-test-')), 'runs')}`],
];

async function ok<T>(args: string[], env: Record<string, string>): Promise<T> {
  const run = await runCli([...args, '--json'], env);
  expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(0);
  return run.json as T;
}

describe.each(backends)('requests of both kinds from the CLI (%s store)', (_kind, store) => {
  it('pending lists the port request; approve, reject and answer decide it, once', async () => {
    const env = { COUNTERSIGN_STORE: store() };
    const first = await ok<{ requests: Array<{ id: string }> }>(
      ['run', 'start', 'refund', '1040', '--run', 'refund-1040', '--as', 'backend', '--user', 'c-300'],
      env,
    );
    const second = await ok<{ requests: Array<{ id: string }> }>(
      ['run', 'start', 'refund', '1043', '--run', 'refund-1043', '--as', 'backend'],
      env,
    );
    const third = await ok<{ requests: Array<{ id: string }> }>(
      ['run', 'start', 'refund', '1044', '--run', 'refund-1044', '--as', 'backend'],
      env,
    );
    const [a, b, c] = [first, second, third].map((view) => view.requests[0]!.id);
    const pending = await ok<View[]>(['pending'], env);
    expect(pending.map((view) => [view.id, view.kind, view.run])).toEqual(
      expect.arrayContaining([
        [a, 'port', 'refund-1040'],
        [b, 'port', 'refund-1043'],
        [c, 'port', 'refund-1044'],
      ]),
    );
    const human = await runCli(['show', a!], env);
    expect(human.stdout).toContain(`Answer needed: ${a}`);
    expect(human.stdout).toContain('port:    manager-approval of workflow refund');
    expect(human.stdout).toContain('for:     c-300');

    // The one who started the run may not decide it, on this path either.
    const own = await runCli(['approve', a!, '--as', 'backend', '--reason', 'x', '--json'], env);
    expect(own.code).not.toBe(0);
    expect((own.json as ErrorOut).error.code).toBe('FORBIDDEN');

    const approved = await ok<{ status: string; outputs: string[] }>(
      ['approve', a!, '--as', 'mona', '--reason', 'Photo checked.'],
      env,
    );
    expect(approved.status).toBe('completed');
    expect(approved.outputs.at(-1)).toBe('Refund issued: 35.00 for order 1040. Manager note: Photo checked.');
    const rejected = await ok<{ status: string }>(
      ['reject', b!, '--as', 'mona', '--reason', 'No photo.'],
      env,
    );
    expect(rejected.status).toBe('completed');
    const answered = await ok<{ status: string }>(
      ['answer', c!, '{"approved": true, "note": "ok"}', '--as', 'mona'],
      env,
    );
    expect(answered.status).toBe('completed');
    expect((await ok<View>(['show', a!], env)).status).toBe('answered');
    expect(await ok<View[]>(['pending'], env)).toEqual([]);
    const again = await runCli(['approve', a!, '--as', 'mona', '--json'], env);
    expect(again.code).not.toBe(0);
    expect((again.json as ErrorOut).error.code).toBe('ALREADY_DECIDED');
    const wrongRun = await runCli(
      ['run', 'respond', 'refund-1043', a!, '{"approved": true, "note": "x"}', '--json'],
      env,
    );
    expect((wrongRun.json as ErrorOut).error.code).toBe('NOT_FOUND');
  });
});
