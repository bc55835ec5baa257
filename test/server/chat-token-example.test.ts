import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { chatLink } from '../../examples/chat-token/mint.ts';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { chatSecret } from '../helpers/chat-client.ts';
import { testServer } from './helpers.ts';

const script = resolve(import.meta.dirname, '../../examples/chat-token/mint.ts');

/** docs/server.md's minting snippet is this file: it must sign a customer in for real. */
describe('examples/chat-token/mint.ts, the host application side', () => {
  let running: RunningServer | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  it('run as a script, prints a link that signs c-100 in to the chat for an hour', async () => {
    running = await startServer(testServer({ chat: { secret: chatSecret } }), { host: '127.0.0.1', port: 0 });
    const minted = Date.now();
    const run = spawnSync(process.execPath, [script, 'c-100', running.url], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', COUNTERSIGN_CHAT_SECRET: chatSecret },
    });
    expect(run.status, run.stderr).toBe(0);
    const link = run.stdout.trim();
    expect(link.startsWith(`${running.url}/chat?token=`)).toBe(true);
    const signIn = await fetch(link, { redirect: 'manual' });
    expect(signIn.status).toBe(303);
    // An hour from when the script minted it, less what starting the script and signing in
    // took (whole seconds: the token's expiry is in seconds); a loaded machine takes seconds.
    const maxAge = Number(/Max-Age=(\d+);/.exec(signIn.headers.get('set-cookie') ?? '')?.[1]);
    expect(maxAge).toBeLessThanOrEqual(3600);
    expect(maxAge).toBeGreaterThanOrEqual(3600 - Math.ceil((Date.now() - minted) / 1000) - 1);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const page = await fetch(`${running.url}/chat`, { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('as c-100, new conversation');
  });

  it('without the secret says what to set; with another secret the link is refused', async () => {
    const run = spawnSync(process.execPath, [script], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('Set COUNTERSIGN_CHAT_SECRET');
    running = await startServer(testServer({ chat: { secret: chatSecret } }), { host: '127.0.0.1', port: 0 });
    const forged = await fetch(
      await chatLink(running.url, 'c-100', 'another-secret-of-the-right-length-000'),
    );
    expect(forged.status).toBe(401);
  });
});
