import { mkdirSync, mkdtempSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookstoreAgent } from '../../examples/bookstore/app.ts';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { kitchenAgent } from '../../examples/kitchen/app.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import { createServer } from '../../src/server/create-server.ts';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { orderStatus } from '../helpers/bookstore-agent.ts';
import { chatSecret, customerToken } from '../helpers/chat-client.ts';
import { scriptModel } from '../helpers/script-model.ts';
import { approvers, tokens } from '../server/helpers.ts';
import { browserMissing, launchChromium } from './browser-env.ts';

const shots = resolve(import.meta.dirname, '../../test-results');
const XSS = '<script>window.__xss=1</script>';

describe.skipIf(browserMissing)(
  'the inbox and the chat in Chromium, against the real server on loopback',
  () => {
    let browser: Browser;
    let running: RunningServer;
    let store: Store;
    const contexts: BrowserContext[] = [];

    beforeAll(async () => {
      mkdirSync(shots, { recursive: true });
      store = createSqliteStore({
        path: join(mkdtempSync(join(tmpdir(), 'countersign-browser-')), 'countersign.db'),
      });
      const server = createServer({
        agents: [
          bookstoreAgent.with({ model: createDemoModel() }),
          kitchenAgent.with({
            model: scriptModel([[{ tool: 'add_to_shopping_list', args: { item: XSS, quantity: '1' } }]]),
          }),
        ],
        store,
        workflows: [refundWorkflow],
        checkpoints: createMemoryCheckpointStore(),
        portRoles: { 'manager-approval': 'manager' },
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

    async function signedIn(token: string, viewport = { width: 1100, height: 900 }): Promise<Page> {
      const context = await browser.newContext({ viewport });
      contexts.push(context);
      const page = await context.newPage();
      await page.goto(`${running.url}/login`);
      await page.getByLabel('Approver token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${running.url}/`);
      return page;
    }

    async function customerContext(): Promise<BrowserContext> {
      const context = await browser.newContext({ viewport: { width: 420, height: 820 } });
      contexts.push(context);
      return context;
    }

    /** Customer c-100 opens the link the host application gave them: signed in, a new conversation. */
    async function customer(id = 'c-100'): Promise<Page> {
      const page = await (await customerContext()).newPage();
      await page.goto(`${running.url}/chat?token=${await customerToken(id)}`);
      await page.waitForURL(`${running.url}/chat`);
      return page;
    }

    /** Sends a message; returns the conversation's session id, which the server chose. */
    async function say(chat: Page, text: string): Promise<string> {
      await chat.getByLabel('Message').fill(text);
      await chat.getByRole('button', { name: 'Send' }).click();
      await chat.waitForURL(/\/chat\?session=/);
      return new URL(chat.url()).searchParams.get('session')!;
    }

    /** A page on another site (localhost is not 127.0.0.1's site), serving `html`. */
    async function otherSite(html: string): Promise<{ url: string; close(): Promise<void> }> {
      const site: Server = createHttpServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/html' });
        response.end(html);
      });
      await new Promise<void>((done) => site.listen(0, '127.0.0.1', done));
      const { port } = site.address() as AddressInfo;
      return {
        url: `http://localhost:${port}/`,
        close: () => new Promise<void>((done) => site.close(() => done())),
      };
    }

    const pendingId = async (session: string): Promise<string> => {
      const list = await fetch(`${running.url}/v1/approvals?status=pending&session=${session}`, {
        headers: { authorization: `Bearer ${tokens.alice}` },
      });
      const [first] = (await list.json()) as Array<{ id: string }>;
      return first!.id;
    };

    it('a request appears live in the inbox, the approver approves, the chat shows the reply', async () => {
      // A refund run waiting for a manager: its request is a card in the same list.
      const run = await fetch(`${running.url}/v1/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.svc}`, 'content-type': 'application/json' },
        body: JSON.stringify({ workflow: 'refund', run: 'refund-1040', input: 1040 }),
      });
      expect(run.status).toBe(200);
      const inbox = await signedIn(tokens.mia);
      await inbox.locator('tr[data-kind="port"]').getByText('manager-approval').waitFor();
      expect(await inbox.locator('#pending-count').textContent()).toBe('1');
      const chat = await customer();
      const session = await say(chat, 'Please cancel my order 1044.');
      await chat.getByText('Waiting for approval').waitFor();

      // No reload: the row arrives over Server-Sent Events.
      const id = await pendingId(session);
      const row = inbox.locator(`[id="${id}"]`);
      await row.waitFor();
      expect(await row.textContent()).toContain('cancel_order');
      expect(await inbox.locator('#pending-count').textContent()).toBe('2');
      // Opened beside the list without a page load: every argument, then the decision.
      await row.locator('a.open').click();
      const pane = inbox.locator(`#pane [data-request="${id}"]`);
      await pane.waitFor();
      expect(await pane.locator('pre.args').textContent()).toContain('"orderId": 1044');
      await inbox.screenshot({ path: join(shots, 'inbox.png'), fullPage: true });
      await chat.screenshot({ path: join(shots, 'chat-waiting.png'), fullPage: true });

      await pane.getByRole('button', { name: 'Approve' }).click();
      await inbox
        .locator('#arrivals')
        .getByText('Approved. The agent replied: Cancelled order 1044')
        .waitFor();

      // The manager answers the refund run from the same list: it opened next, by itself.
      const port = inbox.locator('#pane [data-request]').filter({ has: inbox.getByLabel(/note/) });
      await port.getByLabel(/note/).fill('Photo of the damaged cover checked.');
      await port.getByRole('button', { name: 'Approve' }).click();
      await inbox
        .getByText('Answered. Run refund-1040 is completed. Output: Refund issued: 35.00 for order 1040.')
        .waitFor();
      await chat.locator('#chat-log').getByText('Cancelled order 1044').waitFor();
      expect(await chat.getByText('Waiting for approval').count()).toBe(0);
      await chat.screenshot({ path: join(shots, 'chat.png'), fullPage: true });

      expect(await orderStatus(store, 1044)).toBe('Cancelled');
      const executions = await store.listExecutions({ session });
      expect(executions).toMatchObject([{ requestId: id, status: 'succeeded', tool: 'cancel_order' }]);
      expect((await store.getApproval(id))?.decision?.by).toBe('mia');

      // A workflow request raised while the page is open arrives live too, like a tool call.
      const later = await fetch(`${running.url}/v1/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.svc}`, 'content-type': 'application/json' },
        body: JSON.stringify({ workflow: 'refund', run: 'refund-1043', input: 1043 }),
      });
      const laterId = ((await later.json()) as { requests: Array<{ id: string }> }).requests[0]!.id;
      await inbox.locator(`tr[data-kind="port"][id="${laterId}"]`).waitFor();
      expect(await inbox.locator('#pending-count').textContent()).toBe('1');
    });

    it('rejecting with a reason: the customer reads it in the chat', async () => {
      const chat = await customer();
      const id = await pendingId(await say(chat, 'Please cancel my order 1043.'));
      const approver = await signedIn(tokens.mia);
      await approver.goto(`${running.url}/approvals/${id}`);
      await approver.getByText('Please cancel my order 1043.').waitFor();
      const reject = approver.getByRole('button', { name: 'Reject' });
      await reject.click();
      // The browser insists on a reason before anything is sent.
      expect(approver.url()).toBe(`${running.url}/approvals/${id}`);
      await approver
        .getByLabel(/Reason for rejecting/)
        .fill('It has shipped already; support will call you. Do not retry.');
      await reject.click();
      await approver.locator('.flash', { hasText: 'Rejected.' }).waitFor();
      await approver.getByText(/You rejected this at/).waitFor();
      await chat.locator('#chat-log').getByText('support will call you').waitFor();
      expect((await store.getApproval(id))?.status).toBe('rejected');
      expect(await store.getExecution(id)).toBeNull();
    });

    it('an argument holding a script shows as text and never runs', async () => {
      const posted = await fetch(`${running.url}/v1/sessions/kitchen-xss/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.svc}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'Add it to the list.', user: 'c-300', agent: 'kitchen' }),
      });
      expect(posted.status).toBe(200);
      const id = ((await posted.json()) as { approvals: Array<{ id: string }> }).approvals[0]!.id;
      const inbox = await signedIn(tokens.alice);
      const row = inbox.locator(`[id="${id}"]`);
      await row.waitFor();
      await row.locator('a.open').click();
      expect(await inbox.locator(`#pane [data-request="${id}"] pre.args`).textContent()).toContain(XSS);
      expect(await inbox.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();
      await inbox.goto(`${running.url}/approvals/${id}`);
      expect(await inbox.locator('pre.args').first().textContent()).toContain(XSS);
      expect(await inbox.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();
      expect(await inbox.locator('script:not([src])').count()).toBe(0);
    });

    it('a forged form from another site is refused and decides nothing', async () => {
      const chat = await customer();
      const id = await pendingId(await say(chat, 'Please cancel my order 1044.'));
      const victim = await signedIn(tokens.alice);
      // The attacker's page: another origin on loopback posting to the inbox.
      const attacker: Server = createHttpServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/html' });
        response.end(`<form id="f" method="post" action="${running.url}/approvals/${id}/decide">
        <input name="verdict" value="approve"><input name="csrf" value="guess"></form>
        <script>document.getElementById('f').submit()</script>`);
      });
      await new Promise<void>((done) => attacker.listen(0, '127.0.0.1', done));
      try {
        const { port } = attacker.address() as AddressInfo;
        const response = victim.waitForResponse((r) => r.url().endsWith(`/approvals/${id}/decide`));
        await victim.goto(`http://127.0.0.1:${port}/`);
        expect((await response).status()).toBe(403);
      } finally {
        await new Promise<void>((done) => attacker.close(() => done()));
      }
      expect((await store.getApproval(id))?.status).toBe('pending');
    });

    it('two approvers decide the same request at once: one wins, the other sees who decided first', async () => {
      const chat = await customer();
      const session = await say(chat, 'Please cancel my order 1044.');
      const id = await pendingId(session);
      const [alice, mia] = [await signedIn(tokens.alice), await signedIn(tokens.mia)];
      await alice.goto(`${running.url}/approvals/${id}`);
      await mia.goto(`${running.url}/approvals/${id}`);
      await Promise.all([
        alice.getByRole('button', { name: 'Approve' }).click(),
        mia.getByRole('button', { name: 'Approve' }).click(),
      ]);
      await Promise.all([alice.waitForLoadState(), mia.waitForLoadState()]);
      const winner = (await store.getApproval(id))!.decision!.by;
      expect(['alice', 'mia']).toContain(winner);
      const [won, lost] = winner === 'alice' ? [alice, mia] : [mia, alice];
      await won.getByText('Approved. The agent replied').waitFor();
      await lost.getByText(`Someone was quicker: ${winner} approved this`).waitFor();
      expect(await store.listExecutions({ session })).toHaveLength(1);
    });

    it('the sign-in link leaves no token behind and sets a cookie scripts cannot read', async () => {
      const context = await customerContext();
      const page = await context.newPage();
      const signedOut = await page.goto(`${running.url}/chat`);
      expect(signedOut?.status()).toBe(401);
      await page.getByText('The chat opens from a link that signs you in').waitFor();
      await page.goto(`${running.url}/chat?token=${await customerToken('c-100')}`);
      await page.getByText('as c-100, new conversation').waitFor();
      expect(page.url()).toBe(`${running.url}/chat`);
      const href = await page.evaluate(
        () => (globalThis as unknown as { location: { href: string } }).location.href,
      );
      expect(href).not.toContain('token');
      expect(
        await page.evaluate(
          () => (globalThis as unknown as { document: { cookie: string } }).document.cookie,
        ),
      ).toBe('');
      const [cookie] = await context.cookies(`${running.url}/chat`);
      expect(cookie).toMatchObject({
        name: 'countersign_chat',
        httpOnly: true,
        sameSite: 'Lax',
        path: '/chat',
      });
      // Back goes to the page before the link, not to a URL holding the token.
      await page.goBack();
      expect(page.url()).toBe(`${running.url}/chat`);
    });

    it("c-999 signed in sees none of c-100's conversation", async () => {
      const c100 = await customer();
      const session = await say(c100, 'Please cancel my order 1044.');
      const c999 = await customer('c-999');
      const response = await c999.goto(`${running.url}/chat?session=${session}`);
      expect(response?.status()).toBe(404);
      await c999.getByText(`You have no conversation ${session}.`).waitFor();
      expect(await c999.content()).not.toContain('1044');
    });

    it('the cookie cannot be set from another site, and another site cannot post as the customer', async () => {
      const token = await customerToken('c-100');
      const link = `${running.url}/chat?token=${token}`;
      const embedding =
        await otherSite(`<img src="${link}&via=image"><iframe src="${link}&via=iframe"></iframe>
        <script>fetch(${JSON.stringify(`${link}&via=fetch`)}, { mode: 'no-cors', credentials: 'include' })</script>`);
      const context = await customerContext();
      const page = await context.newPage();
      try {
        // Each request settles as answered or failed: the browser blocks the image's HTML
        // answer (ORB) and the framed page (frame-ancestors) after the server refused them.
        const answers = new Map<string, number>();
        const settled = new Set<string>();
        const all = new Promise<void>((done) => {
          const settle = (request: { url(): string }) => {
            const via = new URL(request.url()).searchParams.get('via');
            if (!request.url().startsWith(link) || !via) return;
            settled.add(via);
            if (settled.size === 3) done();
          };
          page.on('response', (response) => {
            const via = new URL(response.url()).searchParams.get('via');
            if (response.url().startsWith(link) && via) answers.set(via, response.status());
          });
          page.on('requestfinished', settle);
          page.on('requestfailed', settle);
        });
        await page.goto(embedding.url);
        await all;
        expect(answers.get('iframe')).toBe(403);
        expect(answers.get('fetch')).toBe(403);
        expect(await context.cookies(`${running.url}/chat`)).toEqual([]);
      } finally {
        await embedding.close();
      }

      // The host application's page links to the chat: following the link signs in (Lax).
      const host = await otherSite(`<a href="${link}">Open the chat</a>`);
      try {
        await page.goto(host.url);
        await page.getByRole('link', { name: 'Open the chat' }).click();
        await page.getByText('as c-100, new conversation').waitFor();
      } finally {
        await host.close();
      }
      const session = await say(page, 'Where is my order 1044?');
      const before = (await store.loadMessages(session)).length;

      // A form on another site posting into the conversation: the browser withholds the cookie.
      const csrf = await page.locator('input[name="csrf"]').inputValue();
      const attacker = await otherSite(`<form id="f" method="post" action="${running.url}/chat/send">
        <input name="session" value="${session}"><input name="csrf" value="${csrf}">
        <input name="text" value="Please cancel my order 1044."></form>
        <script>document.getElementById('f').submit()</script>`);
      try {
        const posted = page.waitForResponse((r) => r.url() === `${running.url}/chat/send`);
        await page.goto(attacker.url);
        expect((await posted).status()).toBe(401);
      } finally {
        await attacker.close();
      }
      expect(await store.loadMessages(session)).toHaveLength(before);
    });

    it('is readable on a phone', async () => {
      const chat = await customer();
      await say(chat, 'Please cancel my order 1044.');
      const phone = await signedIn(tokens.alice, { width: 390, height: 844 });
      await phone.locator('#pending-list tr.row').first().waitFor();
      const overflow = await phone.evaluate(() => {
        const view = globalThis as unknown as {
          innerWidth: number;
          document: { documentElement: { scrollWidth: number } };
        };
        return view.document.documentElement.scrollWidth - view.innerWidth;
      });
      expect(overflow).toBeLessThanOrEqual(0);
      await phone.screenshot({ path: join(shots, 'inbox-phone.png'), fullPage: true });
    });
  },
);
