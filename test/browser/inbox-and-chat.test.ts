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
        chat: true,
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

    async function customer(session: string): Promise<Page> {
      const context = await browser.newContext({ viewport: { width: 420, height: 820 } });
      contexts.push(context);
      const page = await context.newPage();
      await page.goto(`${running.url}/chat?session=${session}&user=c-100&agent=bookstore`);
      return page;
    }

    async function say(chat: Page, text: string): Promise<void> {
      await chat.getByLabel('Message').fill(text);
      await chat.getByRole('button', { name: 'Send' }).click();
      await chat.waitForLoadState();
    }

    const pendingId = async (session: string): Promise<string> => {
      const list = await fetch(`${running.url}/v1/approvals?status=pending&session=${session}`, {
        headers: { authorization: `Bearer ${tokens.alice}` },
      });
      const [first] = (await list.json()) as Array<{ id: string }>;
      return first!.id;
    };

    it('a request appears live in the inbox, the approver approves, the chat shows the reply', async () => {
      // A refund run waiting for a manager, listed after the tool calls.
      const run = await fetch(`${running.url}/v1/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.svc}`, 'content-type': 'application/json' },
        body: JSON.stringify({ workflow: 'refund', run: 'refund-1040', input: 1040 }),
      });
      expect(run.status).toBe(200);
      const inbox = await signedIn(tokens.mia);
      await inbox.getByText('No requests are waiting.').waitFor();
      const chat = await customer('web-approve');
      await say(chat, 'Please cancel my order 1044.');
      await chat.getByText('Waiting for approval').waitFor();

      // No reload: the card arrives over Server-Sent Events.
      const id = await pendingId('web-approve');
      const card = inbox.locator(`[id="${id}"]`);
      await card.waitFor();
      expect(await card.textContent()).toContain('cancel_order');
      expect(await card.locator('pre.args').textContent()).toContain('"orderId": 1044');
      expect(await inbox.locator('#pending-count').textContent()).toBe('1');
      await inbox.screenshot({ path: join(shots, 'inbox.png'), fullPage: true });
      await chat.screenshot({ path: join(shots, 'chat-waiting.png'), fullPage: true });

      await card.getByRole('button', { name: 'Approve' }).click();
      await inbox.getByText('Approved. The agent replied: Cancelled order 1044').waitFor();

      // The manager answers the refund run from the same list.
      await inbox.getByLabel(/note/).fill('Photo of the damaged cover checked.');
      await inbox.locator('#port-list').getByRole('button', { name: 'Approve' }).click();
      await inbox
        .getByText('Answered. Run refund-1040 is completed. Output: Refund issued: 35.00 for order 1040.')
        .waitFor();
      await chat.locator('#chat-log').getByText('Cancelled order 1044').waitFor();
      expect(await chat.getByText('Waiting for approval').count()).toBe(0);
      await chat.screenshot({ path: join(shots, 'chat.png'), fullPage: true });

      expect(await orderStatus(store, 1044)).toBe('Cancelled');
      const executions = await store.listExecutions({ session: 'web-approve' });
      expect(executions).toMatchObject([{ requestId: id, status: 'succeeded', tool: 'cancel_order' }]);
      expect((await store.getApproval(id))?.decision?.by).toBe('mia');
    });

    it('rejecting with a reason: the customer reads it in the chat', async () => {
      const chat = await customer('web-reject');
      await say(chat, 'Please cancel my order 1043.');
      const id = await pendingId('web-reject');
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
      await approver.getByText(/Rejected by mia/).waitFor();
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
      const card = inbox.locator(`[id="${id}"]`);
      await card.waitFor();
      expect(await card.locator('pre.args').textContent()).toContain(XSS);
      expect(await inbox.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();
      await inbox.goto(`${running.url}/approvals/${id}`);
      expect(await inbox.locator('pre.args').first().textContent()).toContain(XSS);
      expect(await inbox.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();
      expect(await inbox.locator('script:not([src])').count()).toBe(0);
    });

    it('a forged form from another site is refused and decides nothing', async () => {
      const chat = await customer('web-csrf');
      await say(chat, 'Please cancel my order 1044.');
      const id = await pendingId('web-csrf');
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
      const chat = await customer('web-race');
      await say(chat, 'Please cancel my order 1044.');
      const id = await pendingId('web-race');
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
      await lost.getByText(`already approved by ${winner}`).waitFor();
      expect(await store.listExecutions({ session: 'web-race' })).toHaveLength(1);
    });

    it('is readable on a phone', async () => {
      const chat = await customer('web-phone');
      await say(chat, 'Please cancel my order 1044.');
      const phone = await signedIn(tokens.alice, { width: 390, height: 844 });
      await phone.locator('article.card').first().waitFor();
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
