import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { binPath, runCli, tempStore } from '../helpers/cli.ts';

describe('countersign serve', () => {
  it('starts on a free port, prints the inbox, a chat link and a demo token that work, and stops on SIGTERM', async () => {
    const started = Date.now();
    const child = spawn(process.execPath, [binPath, 'serve', '--port', '0', '--chat'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', COUNTERSIGN_STORE: tempStore() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (chunk) => {
      err += chunk;
    });
    const banner = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk) => {
        out += chunk;
        if (out.includes('Press Ctrl+C')) resolve(out);
      });
      child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out}${err}`)));
    });
    const base = /Inbox: (http:\/\/127\.0\.0\.1:\d+)\//.exec(banner)![1]!;
    const token = /with the token (\S+)/.exec(banner)![1]!;
    const link = /Chat: {2}(\S+)/.exec(banner)![1]!;
    expect(link).toMatch(new RegExp(`^${base}/chat\\?token=[\\w-]+\\.[\\w-]+\\.[\\w-]+$`));
    const until = /until (\d\d:\d\d) UTC \(2 hours; a new secret every start;/.exec(banner)![1]!;
    // The child signs the link a moment after `started`, perhaps in the next minute.
    const hhmm = (ms: number) => new Date(ms + 2 * 3_600_000).toISOString().slice(11, 16);
    expect([hhmm(started), hhmm(started + 30_000)]).toContain(until);
    expect(banner).not.toContain('user=');
    expect(banner).toContain('Sign in as demo (support, manager)');
    expect(banner).toContain('workflow refund');

    const unauthenticated = await fetch(`${base}/v1/approvals`);
    expect(unauthenticated.status).toBe(401);
    const listed = await fetch(`${base}/v1/approvals`, { headers: { authorization: `Bearer ${token}` } });
    expect(listed.status).toBe(200);
    expect(await listed.json()).toEqual([]);
    expect((await fetch(`${base}/chat`)).status).toBe(401);
    const signIn = await fetch(link, { redirect: 'manual' });
    expect(signIn.status).toBe(303);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const chat = await fetch(`${base}/chat`, { headers: { cookie } });
    expect(chat.status).toBe(200);
    expect(await chat.text()).toContain('as c-100');

    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('--chat outside the demo needs COUNTERSIGN_CHAT_SECRET, and says so', async () => {
    const run = await runCli(['serve', '--port', '0', '--chat'], {
      COUNTERSIGN_STORE: tempStore(),
      COUNTERSIGN_APP: 'kitchen',
    });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('--chat needs COUNTERSIGN_CHAT_SECRET, and it is not set.');
    expect(run.stderr).toContain('openssl rand -base64 32');
  });
});
