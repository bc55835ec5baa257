import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent } from '../../src/agent/create-agent.ts';
import { createServer } from '../../src/server/create-server.ts';
import { type RunningServer, startServer } from '../../src/server/start-server.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { defineTool } from '../../src/tools/define-tool.ts';
import { scriptModel } from '../helpers/script-model.ts';
import { browserMissing, launchChromium } from './browser-env.ts';

const shots = resolve(import.meta.dirname, '../../test-results');
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const tokens = {
  alice: 'alice-token-edit-quorum-01',
  mia: 'mia-token-edit-quorum-0123',
  lee: 'lee-token-edit-quorum-0123',
  svc: 'svc-token-edit-quorum-0123',
};
const approvers = [
  { name: 'alice', roles: ['support'], token: tokens.alice },
  { name: 'mia', roles: ['support', 'manager'], token: tokens.mia },
  { name: 'lee', roles: ['manager'], token: tokens.lee },
  { name: 'backend', roles: ['service'], token: tokens.svc },
];

/** The model proposed 12 cups; the customer meant 6: a person may correct the quantity. */
const orderCups = defineTool({
  name: 'order_cups',
  description: 'Order cups.',
  input: z.object({ item: z.string(), quantity: z.number().int().positive() }),
  approval: 'always',
  editable: ['quantity'],
  effect: ({ item, quantity }) => `Order ${quantity} × ${item}.`,
  execute: ({ item, quantity }) => ({ ok: true, message: `Ordered ${quantity} × ${item}.` }),
});

/** Refunds above 100 need two managers. */
const refund = defineTool({
  name: 'refund',
  description: 'Refund an order.',
  input: z.object({ orderId: z.number().int(), amount: z.number() }),
  approval: ({ amount }) => (amount > 100 ? { role: 'manager', approvals: 2 } : true),
  effect: ({ orderId, amount }) => `Refund ${amount.toFixed(2)} on order ${orderId}.`,
  execute: ({ orderId, amount }) => ({
    ok: true,
    message: `Refunded ${amount.toFixed(2)} on order ${orderId}.`,
  }),
});

/** A return waits at most a second before it is overdue, and two before it escalates to a manager. */
const acceptReturn = defineTool({
  name: 'accept_return',
  description: 'Accept a return.',
  input: z.object({ orderId: z.number().int() }),
  approval: 'always',
  remindAfter: '1s',
  escalateAfter: '2s',
  escalateTo: 'manager',
  effect: ({ orderId }) => `Accept the return of order ${orderId}.`,
  execute: ({ orderId }) => ({ ok: true, message: `Return of ${orderId} accepted.` }),
});

describe.skipIf(browserMissing)('edit-then-approve and a two-approver quorum, in Chromium', () => {
  let browser: Browser;
  let running: RunningServer;
  let store: Store;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    store = createSqliteStore({
      path: join(mkdtempSync(join(tmpdir(), 'countersign-eq-')), 'countersign.db'),
    });
    const cups = createAgent({
      name: 'cups',
      instructions: 'Orders cups.',
      tools: [orderCups],
      // In test order: cups-1 proposes and is answered; cups-2 and cups-3 only propose.
      model: scriptModel([
        [{ tool: 'order_cups', args: { item: 'espresso cup', quantity: 12 } }],
        ['Ordered.'],
        [{ tool: 'order_cups', args: { item: 'espresso cup', quantity: 12 } }],
        [{ tool: 'order_cups', args: { item: 'espresso cup', quantity: 12 } }],
      ]),
    });
    const refunds = createAgent({
      name: 'refunds',
      instructions: 'Refunds.',
      tools: [refund],
      model: scriptModel([[{ tool: 'refund', args: { orderId: 1044, amount: 250 } }], ['Refund issued.']]),
    });
    const returns = createAgent({
      name: 'returns',
      instructions: 'Returns.',
      tools: [acceptReturn],
      model: scriptModel([
        [{ tool: 'accept_return', args: { orderId: 1050 } }],
        [{ tool: 'accept_return', args: { orderId: 1051 } }],
      ]),
    });
    const server = createServer({
      agents: [cups, refunds, returns],
      store,
      approvers,
      watchIntervalMs: 200,
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

  async function signedIn(token: string): Promise<Page> {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      timezoneId: 'Europe/Berlin',
    });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${running.url}/login`);
    await page.getByLabel('Approver token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${running.url}/`);
    return page;
  }

  async function raise(agent: string, session: string, text: string): Promise<string> {
    const response = await fetch(`${running.url}/v1/sessions/${session}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.svc}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text, user: 'c-100', agent }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { approvals: Array<{ id: string }> }).approvals[0]!.id;
  }

  it('edits the quantity, sees the change, approves it: the edited call runs once', async () => {
    const id = await raise('cups', 'cups-1', 'Six espresso cups, please.');
    const inbox = await signedIn(tokens.alice);
    const pane = inbox.locator(`#pane [data-request="${id}"]`);
    await pane.waitFor();
    // Keyboard: e opens the edit form with its first field focused.
    await inbox.keyboard.press('e');
    const quantity = pane.getByLabel(/^quantity/);
    await expect.poll(() => inbox.evaluate('document.activeElement?.name')).toBe('edit:quantity');
    await quantity.fill('6');
    await pane.getByRole('button', { name: 'Show the changes' }).click();
    const preview = pane.locator('.edit-preview');
    await preview.waitFor();
    expect(await preview.locator('del').textContent()).toBe('12');
    expect(await preview.locator('ins').textContent()).toBe('6');
    await inbox.screenshot({ path: join(shots, 'inbox-edit-diff.png') });
    await preview.getByRole('button', { name: 'Approve with changes' }).click();
    await inbox.locator('#arrivals', { hasText: 'Approved with your changes.' }).waitFor();

    const row = await store.getApproval(id);
    expect(row?.status).toBe('approved');
    expect(row?.decision?.edit?.args).toEqual({ item: 'espresso cup', quantity: 6 });
    expect(row?.decision?.edit?.diff).toEqual([{ field: 'quantity', from: 12, to: 6 }]);
    const executions = await store.listExecutions({ session: 'cups-1' });
    expect(executions).toHaveLength(1);
    expect(JSON.stringify(executions[0]!.result)).toContain('Ordered 6 × espresso cup.');
  });

  it('an edit that is not a number is refused in words, and nothing is decided', async () => {
    const id = await raise('cups', 'cups-2', 'Cups again.');
    const inbox = await signedIn(tokens.alice);
    await inbox.goto(`${running.url}/requests/${id}`);
    await inbox.getByText('Edit, then approve').click();
    await inbox.getByLabel(/^quantity/).fill('six');
    await inbox.getByRole('button', { name: 'Show the changes' }).click();
    await inbox.getByText('quantity must be a number; “six” is not.').waitFor();
    expect((await store.getApproval(id))?.status).toBe('pending');
  });

  it('two managers in two browsers: the first approval is progress, the second runs the refund once', async () => {
    const id = await raise('refunds', 'refund-1', 'Refund my order 1044, it arrived broken.');
    const [mia, lee] = [await signedIn(tokens.mia), await signedIn(tokens.lee)];
    await mia.goto(`${running.url}/?selected=${id}`);
    await lee.goto(`${running.url}/?selected=${id}`);
    await mia.locator(`#pane [data-request="${id}"]`).getByText('0 of 2 approvals').waitFor();

    await mia.locator(`#pane [data-request="${id}"]`).getByRole('button', { name: 'Approve' }).click();
    await mia
      .locator('#arrivals', {
        hasText:
          'Your approval is recorded: 1 of 2. It waits for one more approver with the manager role; nothing has run yet.',
      })
      .waitFor();
    expect((await store.getApproval(id))?.approvals.length).toBe(1);
    expect((await store.getApproval(id))?.status).toBe('pending');
    // The other browser learns of it live: its pane now says who approved so far.
    await lee.locator(`#pane [data-request="${id}"]`).getByText('1 of 2 approvals, by mia').waitFor();
    await mia.goto(`${running.url}/?selected=${id}`);
    await mia.getByText('mia has already approved this request').waitFor();
    await lee.screenshot({ path: join(shots, 'inbox-quorum.png') });

    await lee.locator(`#pane [data-request="${id}"]`).getByRole('button', { name: 'Approve' }).click();
    await expect.poll(async () => (await store.getApproval(id))?.status).toBe('approved');
    const decided = (await store.getApproval(id))!;
    expect(decided.decision?.approvals?.map((a) => a.by)).toEqual(['mia', 'lee']);
    expect(await store.listExecutions({ session: 'refund-1' })).toHaveLength(1);
    const audit = (await store.listAudit({})).filter((e) => e.requestId === id).map((e) => e.kind);
    expect(audit).toContain('request.approval-added');
    expect(audit.filter((kind) => kind === 'request.decided')).toHaveLength(1);
  });

  it('claims with c: the other approver sees who holds it, live, and may still decide; c again releases', async () => {
    const id = await raise('cups', 'cups-3', 'Cups for the office.');
    const [alice, mia] = [await signedIn(tokens.alice), await signedIn(tokens.mia)];
    await alice.goto(`${running.url}/?selected=${id}`);
    await mia.goto(`${running.url}/?selected=${id}`);
    await alice.locator(`#pane [data-request="${id}"]`).getByText('Nobody has claimed it.').waitFor();
    await alice.keyboard.press('c');
    await alice.locator('#arrivals', { hasText: /^Claimed until \d+ \w{3} 2026, \d{2}:\d{2} CET/ }).waitFor();
    await expect.poll(async () => (await store.getApproval(id))?.claim?.by).toBe('alice');
    await alice.locator(`[id="${id}"] td[data-label="Claim"]`, { hasText: 'you' }).waitFor();
    // Mia's page learns of it from the live stream: the row and the pane name alice.
    await mia.locator(`[id="${id}"] td[data-label="Claim"]`, { hasText: 'alice' }).waitFor();
    const miaPane = mia.locator(`#pane [data-request="${id}"]`);
    await miaPane.getByText('Claimed by alice').waitFor();
    await miaPane.getByText('You can still decide it.').waitFor();
    expect(await miaPane.getByRole('button', { name: /Claim/ }).count()).toBe(0);
    expect(await miaPane.getByRole('button', { name: 'Approve' }).count()).toBe(1);

    await alice.keyboard.press('c');
    await alice.locator('#arrivals', { hasText: 'Released' }).waitFor();
    await expect.poll(async () => (await store.getApproval(id))?.claim ?? null).toBeNull();
    await mia.locator(`#pane [data-request="${id}"]`).getByText('Nobody has claimed it.').waitFor();
  });

  it('an overdue request stands out, live, and says it was escalated', async () => {
    const inbox = await signedIn(tokens.lee);
    const id = await raise('returns', 'return-1', 'I want to return order 1050.');
    const row = inbox.locator(`[id="${id}"]`);
    await row.waitFor();
    // The reminder (1 s) and the escalation (2 s) fire from the store; the row is drawn again.
    await inbox.locator(`[id="${id}"].overdue.escalated`).waitFor({ timeout: 15_000 });
    expect(await row.locator('.overdue-badge').textContent()).toBe('overdue');
    await row.locator('a.open').click();
    await inbox
      .locator(`#pane [data-request="${id}"] .overdue-note`)
      .getByText(/and was escalated/)
      .waitFor();
    await inbox.screenshot({ path: join(shots, 'inbox-overdue.png') });
  });

  it('axe-core finds no violations in the edit form and claim, the edit preview page and an overdue row', async () => {
    const page = await signedIn(tokens.mia);
    const scan = async (what: string) => {
      // Evaluated through the debugging protocol, which the page's CSP does not govern.
      await page.evaluate(axeSource);
      const violations = await page.evaluate<string[]>(
        'axe.run().then((r) => r.violations.map((v) => v.id + ": " + v.help + " " + JSON.stringify(v.nodes.map((n) => n.target))))',
      );
      expect(violations, what).toEqual([]);
    };
    const waiting = (await store.pageRequests({ status: 'pending', limit: 50 })).items;
    const cups = waiting.find((r) => r.tool === 'order_cups')!;
    await page.goto(`${running.url}/?selected=${cups.id}`);
    await page.locator('#pane').getByText('Edit, then approve').click();
    await scan('the list with a request open: its edit form and claim');
    await page.goto(`${running.url}/requests/${cups.id}`);
    await page.getByText('Edit, then approve').click();
    await page.getByLabel(/^quantity/).fill('4');
    await page.getByRole('button', { name: 'Show the changes' }).click();
    await page.locator('.edit-preview').waitFor();
    await scan('the edit preview page');
    const overdue = waiting.find((r) => r.tool === 'accept_return');
    if (overdue) {
      await page.goto(`${running.url}/?selected=${overdue.id}`);
      await scan('an overdue, escalated request');
    }
  });

  it('a request raised after the page was rendered but before its live stream connected still arrives', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${running.url}/login`);
    await page.getByLabel('Approver token').fill(tokens.lee);
    // Hold the page's event stream until a request has been raised (set before the page loads).
    let release: () => void = () => undefined;
    const held = new Promise<void>((done) => {
      release = done;
    });
    let asked = '';
    await page.route('**/v1/events**', async (route) => {
      asked = route.request().url();
      await held;
      await route.continue();
    });
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${running.url}/`);
    await expect.poll(() => asked).toContain('/v1/events?after=');
    const id = await raise('returns', 'return-2', 'Return order 1051, please.');
    release();
    await page.locator(`[id="${id}"]`).waitFor();
  });
});
