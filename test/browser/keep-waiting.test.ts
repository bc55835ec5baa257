import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookstoreAgent } from '../../examples/bookstore/app.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import { createServer } from '../../src/server/create-server.ts';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { orderStatus } from '../helpers/bookstore-agent.ts';
import { chatSecret, customerToken } from '../helpers/chat-client.ts';
import { approvers, tokens } from '../server/helpers.ts';
import { browserMissing, launchChromium } from './browser-env.ts';

const shots = resolve(import.meta.dirname, '../../test-results');

/**
 * The bookstore's support desk keeps a request waiting through a customer's "any update?"
 * (onNewMessage: 'keep'), seen through the customer chat page in Chromium against the real
 * server on loopback: the request stays pending, the chat still says it waits, and once a
 * person approves, the outcome reaches the customer.
 */
describe.skipIf(browserMissing)("onNewMessage 'keep' through the customer chat in Chromium", () => {
  let browser: Browser;
  let running: RunningServer;
  let store: Store;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    store = createSqliteStore({
      path: join(mkdtempSync(join(tmpdir(), 'countersign-keep-')), 'countersign.db'),
    });
    const server = createServer({
      agents: [bookstoreAgent.with({ model: createDemoModel() })],
      store,
      approvers,
      chat: { secret: chatSecret },
      log: () => undefined,
    });
    running = await startServer(server, { host: '127.0.0.1', port: 0 });
    browser = await launchChromium();
  });

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => undefined);
    await browser?.close();
    await running?.close();
    await store?.close();
  });

  async function customer(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 420, height: 820 } });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${running.url}/chat?token=${await customerToken('c-100')}`);
    await page.waitForURL(`${running.url}/chat`);
    return page;
  }

  async function say(chat: Page, text: string): Promise<string> {
    await chat.getByLabel('Message').fill(text);
    await chat.getByRole('button', { name: 'Send' }).click();
    await chat.waitForURL(/\/chat\?session=/);
    return new URL(chat.url()).searchParams.get('session')!;
  }

  const api = async (path: string, init: { method?: string; body?: unknown } = {}) => {
    const response = await fetch(`${running.url}${path}`, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${tokens.alice}`,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    return {
      status: response.status,
      json: (await response.json()) as Record<string, unknown> & Array<{ id: string; status: string }>,
    };
  };

  it('"any update?" keeps the request waiting; the approval later reaches the customer', async () => {
    const chat = await customer();
    const session = await say(chat, 'Please cancel my order 1044.');
    await chat.getByText('Waiting for approval').waitFor();
    const [waiting] = (await api(`/v1/requests?status=pending&session=${session}`)).json;
    const id = waiting!.id;

    // The customer asks again while the support team has not decided.
    await chat.getByLabel('Message').fill("What's the status of order 1044?");
    await chat.getByRole('button', { name: 'Send' }).click();
    await chat.locator('#chat-log').getByText('Order 1044 is Processing').waitFor();
    // The request was not answered "moved on": it still waits, and the chat still says so.
    expect((await api(`/v1/requests/${id}`)).json.status).toBe('pending');
    await chat.getByText('Waiting for approval').waitFor();
    expect(await orderStatus(store, 1044)).toBeUndefined();
    await chat.screenshot({ path: join(shots, 'chat-kept-waiting.png'), fullPage: true });

    // The support desk approves; the stored call runs once and the customer is told.
    const decided = await api(`/v1/requests/${id}/decision`, { method: 'POST', body: { approved: true } });
    expect(decided.status).toBe(200);
    await chat
      .locator('#chat-log')
      .getByText('An update on your earlier request: Order 1044 has been cancelled.')
      .waitFor();
    // countersign's notice to the model is not shown as the customer's words.
    expect(await chat.locator('#chat-log').getByText('[countersign]').count()).toBe(0);
    expect(await orderStatus(store, 1044)).toBe('Cancelled');
    expect(await store.listExecutions({ session })).toMatchObject([{ requestId: id, status: 'succeeded' }]);
    await chat.screenshot({ path: join(shots, 'chat-kept-decided.png'), fullPage: true });
  });
});
