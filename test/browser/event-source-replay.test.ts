import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { cutProxy } from '../helpers/cut-proxy.ts';
import { raiseCancel, type TestServer, testServer, tokens } from '../server/helpers.ts';
import { browserMissing, launchChromium } from './browser-env.ts';

interface Seen {
  type: string;
  lastEventId: string;
  id: string | null;
}

/**
 * Chromium's own EventSource against the real server, through a proxy that drops the
 * connection: the browser reconnects by itself, sends Last-Event-ID by itself, and is
 * replayed what happened while it was away.
 */
describe.skipIf(browserMissing)("a browser's EventSource reconnects and is replayed what it missed", () => {
  let browser: Browser;
  let running: RunningServer;
  let server: TestServer;
  let proxy: Awaited<ReturnType<typeof cutProxy>>;

  beforeAll(async () => {
    server = testServer();
    running = await startServer(server, { host: '127.0.0.1', port: 0 });
    const { port } = new URL(running.url);
    proxy = await cutProxy({ host: '127.0.0.1', port: Number(port) });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await proxy?.close();
    await running?.close();
  });

  it('requests raised while the connection was down arrive after the reconnect, in order, without a reload', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${proxy.url}/login`);
    await page.getByLabel('Approver token').fill(tokens.alice);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${proxy.url}/`);
    await page.evaluate(() => {
      const seen: Seen[] = [];
      (globalThis as unknown as { seen: Seen[] }).seen = seen;
      const source = new EventSource('/v1/events');
      for (const type of ['ready', 'approval.requested', 'approval.decided', 'reload'])
        source.addEventListener(type, (event) => {
          const message = event as unknown as { data: string; lastEventId: string };
          const data = JSON.parse(message.data) as { approval?: { id: string } };
          seen.push({ type, lastEventId: message.lastEventId, id: data.approval?.id ?? null });
        });
    });
    const seen = () => page.evaluate(() => (globalThis as unknown as { seen: Seen[] }).seen);
    await expect.poll(async () => (await seen()).map((event) => event.type)).toEqual(['ready']);
    const before = await raiseCancel(server, 'b1');
    await expect.poll(async () => (await seen()).map((event) => event.id)).toContain(before);

    proxy.cut();
    const missed = [await raiseCancel(server, 'b2'), await raiseCancel(server, 'b3')];
    const cursor = (await seen()).at(-1)!.lastEventId;
    proxy.release();

    await expect
      .poll(
        async () =>
          (await seen()).filter((event) => event.type === 'approval.requested').map((event) => event.id),
        {
          timeout: 15_000,
        },
      )
      .toEqual([before, ...missed]);
    const events = await seen();
    expect(events.map((event) => event.type)).toEqual([
      'ready',
      'approval.requested',
      'ready',
      'approval.requested',
      'approval.requested',
    ]);
    // The second stream was asked for by the browser itself, from where it stood.
    const reconnect = proxy.heads.filter((head) => head.startsWith('GET /v1/events')).at(-1)!;
    expect(reconnect.toLowerCase()).toContain(`last-event-id: ${cursor}`);
    const ids = events
      .filter((event) => event.type === 'approval.requested')
      .map((event) => Number(event.lastEventId));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    await context.close();
  });
});
