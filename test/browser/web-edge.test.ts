import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent } from '../../src/agent/create-agent.ts';
import { createServer } from '../../src/server/create-server.ts';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import type { Store } from '../../src/store/store.ts';
import { defineTool } from '../../src/tools/define-tool.ts';
import { chatSecret, customerToken } from '../helpers/chat-client.ts';
import { scriptModel } from '../helpers/script-model.ts';
import { approvers, tokens } from '../server/helpers.ts';
import { browserMissing, launchChromium } from './browser-env.ts';

/** A file name that reads "report.txt" with the override, "report\u202Etxt.exe" in truth. */
const SPOOFED = 'report\u202etxt.exe';
const HIDDEN = ['\u202e', '\u2066', '\u200b', '\u0000', '\u001b'];
const CUSTOMER_TEXT = `Send me ${SPOOFED} please \u2066isolated\u2069 zero\u200bwidth nul\u0000 esc\u001b[2J`;

const sendFile = defineTool({
  name: 'send_file',
  description: 'Send a file to the customer.',
  input: z.object({ name: z.string() }),
  standing: false,
  effect: ({ name }) => `Send the file ${name} to the customer`,
  execute: ({ name }) => ({ ok: true, message: `Sent ${name}.` }),
});

describe.skipIf(browserMissing)('the web edge in Chromium, against the real server on loopback', () => {
  let browser: Browser;
  let running: RunningServer;
  let store: Store;
  let attacker: Server;
  let attackerPort = 0;
  let attackPage = '';
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    store = createMemoryStore();
    const files = createAgent({
      name: 'files',
      instructions: 'Send files.',
      tools: [sendFile],
      model: scriptModel([[{ tool: 'send_file', args: { name: SPOOFED } }], [`Sent\u202e it \u200b.`]]),
    });
    const server = createServer({
      agents: [files],
      store,
      approvers,
      chat: { secret: chatSecret },
      log: () => undefined,
    });
    running = await startServer(server, { host: '127.0.0.1', port: 0 });
    // Another origin on loopback: its page posts whatever form the test puts in attackPage.
    attacker = createHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(attackPage);
    });
    await new Promise<void>((done) => attacker.listen(0, '127.0.0.1', done));
    attackerPort = (attacker.address() as AddressInfo).port;
    browser = await launchChromium();
  });

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => undefined);
    await browser?.close();
    await new Promise<void>((done) => (attacker ? attacker.close(() => done()) : done()));
    await running?.close();
  });

  async function freshPage(): Promise<Page> {
    const context = await browser.newContext();
    contexts.push(context);
    return context.newPage();
  }

  async function signIn(page: Page, token = tokens.mia): Promise<void> {
    await page.getByLabel('Approver token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForLoadState();
  }

  it('a hostile `next` lands on the inbox, signed in or signing in; our own path is kept', async () => {
    const page = await freshPage();
    await page.goto(`${running.url}/login?next=/%09/evil.example/x`);
    await signIn(page);
    expect(page.url()).toBe(`${running.url}/`);
    for (const next of ['/%09/evil.example/x', '/%0a/evil.example/x', '//evil.example', '/%5Cevil.example']) {
      await page.goto(`${running.url}/login?next=${next}`);
      expect(page.url(), next).toBe(`${running.url}/`);
    }
    const other = await freshPage();
    await other.goto(`${running.url}/history`);
    expect(other.url()).toBe(`${running.url}/login?next=%2Fhistory`);
    await signIn(other);
    expect(other.url()).toBe(`${running.url}/history`);
  });

  it('a page on another origin cannot sign a person out; the Sign out button still does', async () => {
    const page = await freshPage();
    await page.goto(`${running.url}/login`);
    await signIn(page);
    attackPage = `<form method="post" action="${running.url}/logout"><input name="csrf" value="guess"></form>
      <script>document.forms[0].submit()</script>`;
    // 127.0.0.1 on another port is the same site (the Strict cookie goes along), localhost is not.
    for (const host of [`127.0.0.1:${attackerPort}`, `localhost:${attackerPort}`]) {
      const answer = page.waitForResponse((r) => r.url() === `${running.url}/logout`);
      await page.goto(`http://${host}/`);
      // Refused (same site, wrong origin) or ignored (no cookie sent): never a cleared cookie.
      expect(await (await answer).headerValue('set-cookie'), host).toBeNull();
      await page.goto(`${running.url}/`);
      expect(page.url(), host).toBe(`${running.url}/`);
      await page.getByText('Signed in as').waitFor();
    }
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${running.url}/login`);
    await page.goto(`${running.url}/`);
    expect(page.url()).toBe(`${running.url}/login?next=%2F`);
  });

  it('invisible characters in the effect and the conversation are shown, not obeyed', async () => {
    const raised = await fetch(`${running.url}/v1/sessions/s-bidi/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.svc}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: CUSTOMER_TEXT, user: 'c-100', agent: 'files' }),
    });
    const turn = (await raised.json()) as { approvals: Array<{ id: string }> };
    const id = turn.approvals[0]!.id;

    const inbox = await freshPage();
    await inbox.goto(`${running.url}/login`);
    await signIn(inbox);
    const effect = inbox.locator(`[id="${id}"] .effect`);
    expect(await effect.textContent()).toBe('Send the file report[U+202E]txt.exe to the customer');
    expect(await effect.locator('.invisible-char').count()).toBe(1);
    // Laid out in logical order: with the override obeyed, "exe" would be drawn left of "txt".
    const [txt, exe] = await effect.evaluate((element) => {
      // The few DOM calls used here (the project's TypeScript has no DOM library).
      type TextNode = { textContent: string | null };
      type Dom = {
        createTreeWalker(root: unknown, show: number): { nextNode(): TextNode | null };
        createRange(): {
          setStart(node: TextNode, offset: number): void;
          setEnd(node: TextNode, offset: number): void;
          getBoundingClientRect(): { left: number };
        };
      };
      const document = (globalThis as unknown as { document: Dom }).document;
      const text = element.textContent ?? '';
      const left = (needle: string) => {
        const walker = document.createTreeWalker(element, 4 /* NodeFilter.SHOW_TEXT */);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const at = (node.textContent ?? '').indexOf(needle);
          if (at < 0) continue;
          const range = document.createRange();
          range.setStart(node, at);
          range.setEnd(node, at + needle.length);
          return range.getBoundingClientRect().left;
        }
        throw new Error(`${needle} not in ${text}`);
      };
      return [left('txt.'), left('exe')];
    });
    expect(txt).toBeLessThan(exe);

    await inbox.goto(`${running.url}/approvals/${id}`);
    const customerSaid = await inbox.locator('.msg.user p').textContent();
    for (const char of HIDDEN) expect(customerSaid).not.toContain(char);
    for (const name of ['[U+202E]', '[U+2066]', '[U+2069]', '[U+200B]', '[U+0000]', '[U+001B]'])
      expect(customerSaid).toContain(name);
    const bodyText = await inbox.locator('main').textContent();
    for (const char of HIDDEN) expect(bodyText).not.toContain(char);

    const chat = await freshPage();
    // Signed in as the session's customer with a host-signed link (the chat trusts nothing else).
    await chat.goto(`${running.url}/chat?token=${await customerToken('c-100')}&session=s-bidi`);
    const log = await chat.locator('#chat-log').textContent();
    for (const char of HIDDEN) expect(log).not.toContain(char);
    expect(log).toContain('Send the file report[U+202E]txt.exe');
    expect(log).toContain('zero[U+200B]width');
  });
});
