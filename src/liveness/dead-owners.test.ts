import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { deadOwners, judgeLocally } from './dead-owners.ts';
import { formatOwner, parseOwner } from './lease-owner.ts';
import type { Liveness } from './liveness.ts';
import { localLiveness } from './local/local-liveness.ts';
import { type ProcessSpace, thisProcess } from './process-space.ts';

/** A pid that existed and is gone: a child that has exited and been reaped. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

/** A backend whose released tokens the test sets, answer by answer; it counts the questions. */
function scripted(answers: Array<readonly string[]>): Liveness & { asked: string[][] } {
  const asked: string[][] = [];
  return {
    ...localLiveness,
    kind: 'scripted',
    asked,
    async released(tokens) {
      asked.push([...tokens]);
      const answer = new Set(answers.shift() ?? []);
      return new Set(tokens.filter((token) => answer.has(token)));
    },
  };
}

const here: ProcessSpace = { hostname: 'vm', space: 'vm/4026531836.0123456789abcdef', pid: 4242 };

describe('lease owners', () => {
  it('round-trip with and without a token; anything else does not parse', () => {
    expect(parseOwner(formatOwner(here.space, 12, 'n0nce', 'pg1f'))).toEqual({
      space: here.space,
      pid: 12,
      token: 'pg1f',
    });
    expect(parseOwner('vm:12:abc')).toEqual({ space: 'vm', pid: 12, token: null });
    for (const bad of [
      'run-1',
      'a:b',
      'vm:0:n',
      'vm:-1:n',
      'vm:1.5:n',
      'vm:12:',
      ':12:n',
      'vm:12:n:t:x',
      'vm:12:n:bad token',
    ])
      expect(parseOwner(bad), bad).toBeNull();
  });

  it('this process’s space names its PID namespace and boot where /proc tells them', () => {
    const me = thisProcess();
    expect(me.pid).toBe(process.pid);
    expect(me.hostname).toBe(hostname().replaceAll(':', '_'));
    expect(me.space).toMatch(/^[^:]+\/\d+\.[0-9a-f]{16}$/);
  });
});

describe('judgeLocally: what this process tells without asking', () => {
  const gone = (pid: number) => pid === 13;

  it('a holder in this space: dead exactly when its PID is gone, never this process', () => {
    expect(judgeLocally(formatOwner(here.space, 13, 'n', 'pgaa'), here, gone)).toBe('dead');
    expect(judgeLocally(formatOwner(here.space, 14, 'n', 'pgaa'), here, gone)).toBe('alive');
    expect(judgeLocally(formatOwner(here.space, here.pid, 'n', null), here, () => true)).toBe('alive');
  });

  it('an owner written before spaces (bare host name): the same host name means the same PIDs, as before', () => {
    expect(judgeLocally('vm:13:n', here, gone)).toBe('dead');
    expect(judgeLocally('vm:14:n', here, gone)).toBe('alive');
    expect(judgeLocally('other:13:n', here, gone)).toBe('alive');
  });

  it('the same host name in another PID namespace or boot is another space: its PID is not looked at here', () => {
    const container = 'vm/4026532178.0123456789abcdef';
    const rebooted = 'vm/4026531836.fedcba9876543210';
    expect(judgeLocally(formatOwner(container, 13, 'n', null), here, gone)).toBe('alive');
    expect(judgeLocally(formatOwner(container, 13, 'n', 'pgaa'), here, gone)).toEqual({ ask: 'pgaa' });
    expect(judgeLocally(formatOwner(rebooted, 13, 'n', 'pgbb'), here, gone)).toEqual({ ask: 'pgbb' });
  });

  it('an edited row naming a pid no process can have is not a death: the real PID probe says alive', () => {
    const me = thisProcess();
    expect(judgeLocally(formatOwner(me.space, 2 ** 40, 'n', null), me)).toBe('alive');
    expect(judgeLocally(formatOwner(me.space, 2 ** 31, 'n', 'pgaa'), me)).toBe('alive');
  });

  it('a holder elsewhere without a token, or an owner that does not parse, is alive (its term decides)', () => {
    expect(judgeLocally('elsewhere/1.0123456789abcdef:13:n', here, gone)).toBe('alive');
    expect(judgeLocally('run-1', here, gone)).toBe('alive');
  });
});

describe('deadOwners: the one rule', () => {
  const remote = (token: string) => formatOwner('elsewhere/1.0123456789abcdef', 7, 'n', token);

  it('judges this space by PID without asking, and asks once about all the holders elsewhere', async () => {
    const liveness = scripted([
      ['pgaa', 'pgbb'],
      ['pgaa', 'pgbb'],
    ]);
    const local = formatOwner(thisProcess().space, deadPid(), 'n', 'pgcc');
    const dead = await deadOwners(
      [local, remote('pgaa'), remote('pgbb'), remote('pgaa'), 'run-1'],
      liveness,
      {
        confirmMs: 1,
      },
    );
    expect(dead).toEqual(new Set([local, remote('pgaa'), remote('pgbb')]));
    expect(liveness.asked).toEqual([
      ['pgaa', 'pgbb'],
      ['pgaa', 'pgbb'],
    ]);
  });

  it('a token released once but held again at the second look is a reconnect, not a death', async () => {
    const liveness = scripted([['pgaa', 'pgbb'], ['pgbb']]);
    const started = Date.now();
    const dead = await deadOwners([remote('pgaa'), remote('pgbb')], liveness, { confirmMs: 50 });
    expect(dead).toEqual(new Set([remote('pgbb')]));
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    // The second look asks only about what the first found released.
    expect(liveness.asked).toEqual([
      ['pgaa', 'pgbb'],
      ['pgaa', 'pgbb'],
    ]);
  });

  it('nothing released: one question and no pause; nothing to ask: no question', async () => {
    const liveness = scripted([[]]);
    const started = Date.now();
    expect(await deadOwners([remote('pgaa')], liveness)).toEqual(new Set());
    expect(Date.now() - started).toBeLessThan(400);
    expect(liveness.asked).toHaveLength(1);
    expect(await deadOwners([formatOwner(here.space, 1, 'n', null), 'x'], liveness)).toEqual(new Set());
    expect(liveness.asked).toHaveLength(1);
  });

  it('edited rows: garbage, empty, huge, a reused pid, this very process: none is judged dead, nothing throws', async () => {
    // A backend that says every token it is asked about is released: only the rule protects.
    const liveness = scripted([
      ['pgaa', 'pgbb'],
      ['pgaa', 'pgbb'],
    ]);
    const me = thisProcess();
    const forged = [
      '',
      ':',
      ':::',
      'x'.repeat(1_000_000),
      `${me.space}:${process.pid}:n:${'a'.repeat(65)}`,
      ':'.repeat(10_000),
      `${me.space}:${'9'.repeat(400)}:n:pgaa`,
      // In this space, a pid that is now another live process (the parent of this one): the
      // pid says alive, whatever the token says.
      formatOwner(me.space, process.ppid, 'old', 'pgaa'),
      // This process itself, under an earlier run's nonce and a token it no longer holds.
      formatOwner(me.space, process.pid, 'earlier', 'pgbb'),
    ];
    expect(await deadOwners(forged, liveness, { here: me, confirmMs: 1 })).toEqual(new Set());
    // The two tokens were never even asked about: both owners were judged by their pid here.
    expect(liveness.asked).toEqual([]);
  });

  it('the local backend never judges a holder elsewhere dead, token or not', async () => {
    expect(await deadOwners([remote('pgaa'), 'elsewhere:7:n'], localLiveness)).toEqual(new Set());
  });
});
