import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { binPath, tempStore } from '../helpers/cli.ts';

describe('countersign serve', () => {
  it('starts on a free port, prints the inbox, chat and a demo token that works, and stops on SIGTERM', async () => {
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
    expect(banner).toContain(`Chat:  ${base}/chat?session=demo&user=c-100`);
    expect(banner).toContain('Sign in as demo (support, manager)');
    expect(banner).toContain('workflow refund');

    const unauthenticated = await fetch(`${base}/v1/approvals`);
    expect(unauthenticated.status).toBe(401);
    const listed = await fetch(`${base}/v1/approvals`, { headers: { authorization: `Bearer ${token}` } });
    expect(listed.status).toBe(200);
    expect(await listed.json()).toEqual([]);
    const chat = await fetch(`${base}/chat`);
    expect(chat.status).toBe(200);

    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
