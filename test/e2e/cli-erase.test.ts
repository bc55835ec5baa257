import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';

/**
 * `countersign erase` and `countersign purge` as an operator runs them, each command its
 * own process on one SQLite file (and the same with a file: store of workflow runs).
 */
type Turn = { approvals: Array<{ id: string }> };

const envFor = (store = tempStore()) => ({ COUNTERSIGN_STORE: store });
const chat = async (env: Record<string, string>, session: string, user: string, text: string) => {
  const run = await runCli(['chat', '--as', 'backend', session, text, '--user', user, '--json'], env);
  expect(run.code, run.stderr).toBe(0);
  return run.json as Turn;
};

describe('countersign erase', () => {
  it('erases a customer: pending requests expired first, their text gone from the file, the chain verifies', async () => {
    const env = envFor();
    const id = (await chat(env, 's1', 'c-100', 'Please cancel my order 1044. I moved to 7 Quince Road.'))
      .approvals[0]!.id;
    await chat(env, 's2', 'c-100', "What's the status of order 1043? Ring at 7 Quince Road.");
    await chat(env, 's3', 'c-200', "What's the status of order 1045? I live on Juniper Lane.");

    const erased = await runCli(['erase', '--principal', 'c-100', '--as', 'dpo', '--json'], env);
    expect(erased.code, erased.stderr).toBe(0);
    expect(erased.json).toMatchObject({ principal: 'c-100', by: 'dpo', erased: true, expired: [id] });
    expect((erased.json as { counts: { sessions: number } }).counts.sessions).toBe(2);

    const text = await runCli(['erase', '--principal', 'c-100', '--as', 'dpo'], env);
    expect(text.stdout.trim()).toBe(
      'Nothing to erase for customer c-100: no session, request or run names them.',
    );

    const approve = await runCli(['approve', id, '--as', 'alice', '--json'], env);
    expect(approve.code).not.toBe(0);
    expect((approve.json as { error: { code: string } }).error.code).toBe('NOT_FOUND');

    const verify = await runCli(['audit', '--verify'], env);
    expect(verify.code, verify.stdout).toBe(0);
    expect(verify.stdout).toMatch(/^Audit chain intact: \d+ entries \(\d+ with their data erased\)\./);
    const trail = await runCli(['audit'], env);
    expect(trail.stdout).toMatch(/request\.raised .* \(data erased /);
    expect(trail.stdout).toMatch(/principal\.erased +by dpo \{"auditEntries":\d+,.*"principal":"c-100"/);
    expect(trail.stdout).not.toContain('Quince');

    const file = readFileSync(env.COUNTERSIGN_STORE.slice('sqlite:'.length)).toString('latin1');
    expect(file).not.toContain('Quince Road');
    expect(file).toContain('Juniper Lane');
  });

  it("overwrites the app state the app names as the customer's (the bookstore's cart)", async () => {
    const env = envFor();
    await chat(env, 's1', 'c-100', 'Add b-1 to my cart.');
    const erased = await runCli(['erase', '--principal', 'c-100', '--json'], env);
    expect(erased.json).toMatchObject({ erased: true, stateKeys: 1 });
    const db = new DatabaseSync(env.COUNTERSIGN_STORE.slice('sqlite:'.length));
    try {
      expect(db.prepare("SELECT value FROM state WHERE key = 'cart:c-100'").get()).toEqual({ value: 'null' });
    } finally {
      db.close();
    }
  });

  it('on a file: store of workflow runs: the waiting request expired first, the run gone', async () => {
    const env = { COUNTERSIGN_STORE: `file:${mkdtempSync(join(tmpdir(), 'countersign-erase-files-'))}` };
    const started = await runCli(
      [
        'run',
        'start',
        'refund',
        '1040',
        '--run',
        'refund-1040',
        '--user',
        'c-100',
        '--as',
        'backend',
        '--json',
      ],
      env,
    );
    expect(started.code, started.stderr).toBe(0);
    const id = (started.json as { requests: Array<{ id: string }> }).requests[0]!.id;
    const erased = await runCli(['erase', '--principal', 'c-100', '--as', 'dpo'], env);
    expect(erased.stdout).toContain(`Expired first: ${id}.`);
    expect(erased.stdout).toContain('1 run (2 checkpoints)');
    expect(erased.stdout).toContain('A file: store keeps no audit trail');
    expect(((await runCli(['runs', '--json'], env)).json as unknown[]).length).toBe(0);
    const answer = await runCli(['answer', id, '{"approved": true}', '--as', 'mia', '--json'], env);
    expect((answer.json as { error: { code: string } }).error.code).toBe('NOT_FOUND');
  });

  it('refuses a malformed id and requires --principal', async () => {
    const env = envFor();
    const bad = await runCli(['erase', '--principal', 'two words', '--json'], env);
    expect(bad.code).not.toBe(0);
    expect((bad.json as { error: { code: string } }).error.code).toBe('INVALID_INPUT');
    const missing = await runCli(['erase', '--json'], env);
    expect(missing.code).not.toBe(0);
    expect((missing.json as { error: { code: string } }).error.code).toBe('INVALID_INPUT');
  });
});

describe('countersign purge', () => {
  it('removes what is past its period and keeps what waits; --dry-run only counts', async () => {
    const env = envFor();
    const waiting = (await chat(env, 's1', 'c-100', 'Please cancel my order 1044.')).approvals[0]!.id;
    await chat(env, 's2', 'c-200', "What's the status of order 1045?");
    const retained = { ...env, COUNTERSIGN_RETENTION: 'sessions=1ms,runs=1ms,requests=1ms' };

    const dry = await runCli(['purge', '--dry-run', '--json'], retained);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json).toMatchObject({
      dryRun: true,
      counts: { sessions: 1, runs: 0, requests: 0, auditEntries: 0 },
    });
    const dryText = await runCli(['purge', '--dry-run'], retained);
    expect(dryText.stdout.trim()).toBe('Would remove 1 finished session.');

    const done = await runCli(['purge'], retained);
    expect(done.stdout.trim()).toBe('Removed 1 finished session.');
    const again = await runCli(['purge'], retained);
    expect(again.stdout.trim()).toBe('Nothing is past its retention period.');

    // The waiting session and its request stay.
    const pending = (await runCli(['pending', '--json'], env)).json as Array<{ id: string }>;
    expect(pending.map((row) => row.id)).toEqual([waiting]);
    const audit = await runCli(['audit'], env);
    expect(audit.stdout).toMatch(/retention\.purged +by .*"sessions":1/);
    expect((await runCli(['audit', '--verify'], env)).code).toBe(0);

    // Audit retention erases data in place; the chain still verifies.
    const erased = await runCli(['purge', '--json'], { ...env, COUNTERSIGN_RETENTION: 'audit=1ms' });
    expect((erased.json as { counts: { auditEntries: number } }).counts.auditEntries).toBeGreaterThan(0);
    expect((await runCli(['audit', '--verify'], env)).stdout).toMatch(/with their data erased/);
  });

  it('a clear CONFIG_ERROR without COUNTERSIGN_RETENTION, or with a bad one', async () => {
    const env = envFor();
    for (const value of [undefined, 'sessions=soon', 'session=90d', 'sessions=90d,sessions=30d', 'audit']) {
      const run = await runCli(
        ['purge', '--json'],
        value === undefined ? env : { ...env, COUNTERSIGN_RETENTION: value },
      );
      expect(run.code, value).not.toBe(0);
      expect((run.json as { error: { code: string } }).error.code, value).toBe('CONFIG_ERROR');
    }
  });
});
