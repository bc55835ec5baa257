import { mkdtempSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { build } from 'vite';
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

const pageRoot = resolve(import.meta.dirname, '../../examples/use-chat');
const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

/**
 * The page a host application would ship: built by Vite, served from its own static server on
 * loopback, which passes everything that is not the page on to countersign (as a host's
 * reverse proxy would), so the chat's cookie and same-origin checks see one site.
 */
async function hostSite(dist: string, upstream: URL): Promise<{ url: string; server: Server }> {
  const server = createHttpServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path.startsWith('/chat/ui/')) {
      const file = path === '/chat/ui/' ? 'index.html' : path.slice('/chat/ui/'.length);
      try {
        const body = await readFile(join(dist, file));
        res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
        res.end(body);
      } catch {
        res.writeHead(404).end();
      }
      return;
    }
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(forward);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe.skipIf(browserMissing)(
  'a React page with useChat (@ai-sdk/react), built by Vite, in Chromium',
  () => {
    let browser: Browser;
    let running: RunningServer;
    let store: Store;
    let site: { url: string; server: Server };

    beforeAll(async () => {
      const dist = mkdtempSync(join(tmpdir(), 'countersign-use-chat-'));
      await build({
        configFile: join(pageRoot, 'vite.config.ts'),
        build: { outDir: dist, emptyOutDir: true },
      });
      store = createSqliteStore({ path: join(dist, 'countersign.db') });
      const server = createServer({
        agents: [bookstoreAgent.with({ model: createDemoModel() })],
        store,
        approvers,
        chat: { secret: chatSecret },
        log: () => undefined,
      });
      running = await startServer(server, { host: '127.0.0.1', port: 0 });
      site = await hostSite(dist, new URL(running.url));
      browser = await launchChromium();
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await new Promise((done) => site?.server.close(done));
      await running?.close();
      await store?.close();
    });

    async function openPage(customer: string): Promise<Page> {
      const context = await browser.newContext({ viewport: { width: 600, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${site.url}/chat?token=${await customerToken(customer)}`);
      await page.waitForURL(`${site.url}/chat`);
      await page.goto(`${site.url}/chat/ui/`);
      return page;
    }

    it('streams the reply, shows the approval part, refuses the page’s own approval, shows the result once an approver decides', async () => {
      const page = await openPage('c-100');
      let session = '';
      page.on('request', (request) => {
        if (request.url().endsWith('/chat/api/ui') && session === '')
          session = (JSON.parse(request.postData() ?? '{}') as { id: string }).id;
      });
      await page.getByLabel('Message').fill('Please cancel my order 1044.');
      await page.getByRole('button', { name: 'Send' }).click();

      // The request appears as the AI SDK's approval part, with the request's effect.
      const tool = page.locator('section.tool[data-tool="cancel_order"]');
      await tool.and(page.locator('[data-state="approval-requested"]')).waitFor();
      expect(await tool.textContent()).toContain('Waiting for approval: Cancel order 1044');
      expect(await tool.locator('pre').textContent()).toContain('"orderId":1044');
      const [request] = (await store.listApprovals({ status: 'pending', session })) as Array<{ id: string }>;
      expect(request).toBeDefined();

      // The customer's own addToolApprovalResponse is refused: nothing is decided.
      await page.getByRole('button', { name: 'Approve it myself' }).click();
      await page.getByRole('alert').getByText('is decided by an approver in the inbox').waitFor();
      expect((await store.getApproval(request!.id))?.status).toBe('pending');
      expect(await orderStatus(store, 1044)).not.toBe('Cancelled');

      // An approver decides over HTTP; the page's next request shows the tool result and the reply.
      const decided = await fetch(`${running.url}/v1/requests/${request!.id}/decision`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.mia}`, 'content-type': 'application/json' },
        body: JSON.stringify({ approved: true }),
      });
      expect(decided.status).toBe(200);
      await page.getByRole('button', { name: 'Check for updates' }).click();
      await tool.and(page.locator('[data-state="output-available"]')).waitFor();
      expect(await tool.locator('.result').textContent()).toContain('Result:');
      await page.locator('p.text').getByText('Cancelled order 1044').waitFor();
      expect(await page.getByRole('alert').count()).toBe(0);
      expect(await orderStatus(store, 1044)).toBe('Cancelled');
      expect((await store.getApproval(request!.id))?.decision?.by).toBe('mia');
    });
  },
);
