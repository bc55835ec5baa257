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
import { approvers, tokens } from '../server/helpers.ts';
import { browserMissing, launchChromium } from './browser-env.ts';

const shots = resolve(import.meta.dirname, '../../test-results');
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const WAITING = 500;

/** A parcel desk: every shipment waits for a person; customers c-0 … c-9. */
const shipParcel = defineTool({
  name: 'ship_parcel',
  description: 'Ship a parcel.',
  input: z.object({ parcel: z.number().int(), to: z.string() }),
  approval: 'always',
  effect: ({ parcel, to }) => `Ship parcel ${parcel} to ${to}.`,
  execute: ({ parcel }) => ({ ok: true, message: `Shipped parcel ${parcel}.` }),
});

describe.skipIf(browserMissing)('the inbox for 500 requests, in Chromium over loopback HTTP', () => {
  let browser: Browser;
  let running: RunningServer;
  let store: Store;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    store = createSqliteStore({
      path: join(mkdtempSync(join(tmpdir(), 'countersign-inbox-')), 'countersign.db'),
    });
    // One model step per raised request first, then "done" for every continuation.
    const model = scriptModel(
      Array.from({ length: WAITING }, (_, i) => [
        { tool: 'ship_parcel', args: { parcel: 1000 + i, to: i % 10 === 3 ? 'Zürich' : 'Berlin' } },
      ]),
    );
    const desk = createAgent({ name: 'parcels', instructions: 'Ship parcels.', tools: [shipParcel], model });
    const server = createServer({ agents: [desk], store, approvers, log: () => undefined });
    running = await startServer(server, { host: '127.0.0.1', port: 0 });
    const seeded = desk.with({ store });
    for (let i = 0; i < WAITING; i++) {
      await seeded.chat(`parcel-${i}`, `Please ship parcel ${1000 + i}.`, {
        principal: `c-${i % 10}`,
        by: 'backend',
      });
    }
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => undefined);
    await browser?.close();
    await running?.close();
    await store?.close();
  });

  async function signedIn(
    token: string,
    options: { viewport?: { width: number; height: number }; bypassCSP?: boolean } = {},
  ): Promise<Page> {
    const context = await browser.newContext({
      viewport: options.viewport ?? { width: 1280, height: 900 },
      timezoneId: 'Europe/Berlin',
      ...(options.bypassCSP ? { bypassCSP: true } : {}),
    });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${running.url}/login`);
    await page.getByLabel('Approver token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${running.url}/`);
    return page;
  }

  const pendingCount = async () =>
    (await store.pageRequests({ status: 'pending', limit: 1, count: true })).total?.count ?? -1;

  it('lists 500 waiting requests 50 to a page, with filters, search and paging from the store', async () => {
    const inbox = await signedIn(tokens.alice);
    expect(await inbox.locator('#pending-count').textContent()).toBe('500');
    expect(await inbox.locator('#pending-list tr.row').count()).toBe(50);
    await inbox.getByText('Showing 1–50 of 500').waitFor();
    // The first request is open beside the list, its conversation included.
    await inbox.locator('#pane').getByText('Please ship parcel 1000.').waitFor();

    await inbox.getByRole('link', { name: 'Next page' }).click();
    await inbox.getByText('Showing 51–100 of 500').waitFor();
    expect(await inbox.locator('#pending-list tr.row').first().textContent()).toContain('Ship parcel 1050');

    // Search over effect and customer: case-insensitive, partial.
    await inbox.getByLabel(/^Search/).fill('ZüRICH');
    await inbox.getByRole('button', { name: 'Show' }).click();
    await inbox.getByText('Showing 1–50 of 50').waitFor();
    const customers = await inbox.locator('#pending-list td[data-label="Customer"]').allTextContents();
    expect(new Set(customers)).toEqual(new Set(['c-3']));

    await inbox.goto(`${running.url}/?customer=C-7&tool=PARCEL`);
    await inbox.getByText('Showing 1–50 of 50').waitFor();
    await inbox.goto(`${running.url}/?q=no-such-thing`);
    await inbox.getByText('No waiting request matches these filters.').waitFor();
    await inbox.screenshot({ path: join(shots, 'inbox-list-filtered.png') });
  });

  it('decides with the keyboard alone: next, approve, reject with a reason; focus moves on', async () => {
    const inbox = await signedIn(tokens.alice);
    const before = await pendingCount();
    await inbox.keyboard.press('j');
    const second = await inbox.locator('#pending-list tr.row').nth(1).getAttribute('id');
    const third = await inbox.locator('#pending-list tr.row').nth(2).getAttribute('id');
    await expect.poll(() => inbox.evaluate('document.activeElement?.closest("tr")?.id')).toBe(second);
    await inbox.locator(`#pane [data-request="${second}"]`).waitFor();
    await inbox.keyboard.press('a');

    await inbox.locator('#arrivals', { hasText: 'Approved.' }).waitFor();
    await expect.poll(async () => (await store.getApproval(second!))?.status).toBe('approved');
    expect((await store.getApproval(second!))?.decision?.by).toBe('alice');
    // No page load: the next request opened, and the focus is on it.
    await inbox.locator(`#pane [data-request="${third}"]`).waitFor();
    await expect.poll(() => inbox.evaluate('document.activeElement?.closest("tr")?.id')).toBe(third);
    expect(await inbox.locator(`[id="${second}"]`).count()).toBe(0);

    await inbox.keyboard.press('r');
    await inbox.keyboard.type('The address is incomplete; ask the customer. Do not retry.');
    await inbox.keyboard.press('Enter');
    await expect.poll(async () => (await store.getApproval(third!))?.status).toBe('rejected');
    expect((await store.getApproval(third!))?.decision?.reason).toBe(
      'The address is incomplete; ask the customer. Do not retry.',
    );
    expect(await pendingCount()).toBe(before - 2);
    await expect.poll(() => inbox.locator('#pending-count').textContent()).toBe(String(before - 2));
    // The shortcuts are listed on the page.
    await inbox.getByText('Keyboard shortcuts').click();
    for (const key of ['j or ↓', 'k or ↑', 'a', 'r', 'c', 'x'])
      await inbox.locator('#shortcut-keys kbd', { hasText: key }).first().waitFor();
  });

  it('approves several at once with one reason: each decided and audited on its own', async () => {
    const inbox = await signedIn(tokens.mia);
    const ids = await inbox
      .locator('#pending-list tr.row')
      .evaluateAll((rows) => rows.slice(0, 3).map((row) => row.id));
    for (const id of ids) await inbox.locator(`[id="${id}"] input[type="checkbox"]`).check();
    await inbox.locator('#bulk-reason').fill('Checked the batch against the manifest.');
    await inbox.getByRole('button', { name: 'Approve selected' }).click();
    await inbox.locator('#arrivals', { hasText: 'Approved 3 of 3.' }).waitFor();
    for (const id of ids) {
      const row = await store.getApproval(id);
      expect(row?.status).toBe('approved');
      expect(row?.decision).toMatchObject({ by: 'mia', reason: 'Checked the batch against the manifest.' });
      const audit = await store.listAudit({});
      expect(audit.filter((e) => e.requestId === id && e.kind === 'request.decided')).toHaveLength(1);
      expect(await inbox.locator(`[id="${id}"]`).count()).toBe(0);
    }
  });

  it('works without JavaScript: the pane is a link and deciding is a form post', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${running.url}/login`);
    await page.getByLabel('Approver token').fill(tokens.alice);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${running.url}/`);
    const row = page.locator('#pending-list tr.row').nth(1);
    const id = (await row.getAttribute('id'))!;
    await row.locator('a.open').click();
    await page.waitForURL(new RegExp(`selected=${id}`));
    await page.locator(`#pane [data-request="${id}"]`).getByRole('button', { name: 'Approve' }).click();
    await page.locator('.flash', { hasText: 'Approved.' }).waitFor();
    expect((await store.getApproval(id))?.status).toBe('approved');
  });

  it('history: the same filters, partial and case-insensitive, counted and paged, local times', async () => {
    const inbox = await signedIn(tokens.alice);
    await inbox.goto(`${running.url}/history?tool=SHIP`);
    await inbox.getByText(/Showing 1–\d+ of \d+/).waitFor();
    expect(await inbox.locator('table.history tbody tr').count()).toBeGreaterThan(3);
    await inbox.getByText('Times are in your time zone (Europe/Berlin).').waitFor();
    const when = await inbox.locator('table.history tbody tr td[data-label="When"]').first().textContent();
    expect(when).toMatch(/\d{2}:\d{2} CET$/);
    await inbox.goto(`${running.url}/history?status=rejected`);
    expect(await inbox.locator('table.history tbody tr').count()).toBe(1);
  });

  it('speaks to people: a decided request names who and when in local time; a missing one says where to look', async () => {
    const inbox = await signedIn(tokens.alice);
    const decided = (await store.pageRequests({ sort: 'decided', limit: 1 })).items[0]!;
    await inbox.goto(`${running.url}/requests/${decided.id}`);
    await inbox.getByText(/(You|\w+) (approved|rejected) this at \d+ \w{3} 2026, \d{2}:\d{2} CET/).waitFor();
    const missing = await inbox.goto(`${running.url}/requests/apr-nope`);
    expect(missing?.status()).toBe(404);
    await inbox.getByText('There is no request apr-nope here.').waitFor();
    expect(await inbox.content()).not.toContain('countersign pending');
  });

  it('is readable on a phone: no sideways scrolling, every column labelled', async () => {
    const phone = await signedIn(tokens.alice, { viewport: { width: 390, height: 844 } });
    const overflow = await phone.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await phone.screenshot({ path: join(shots, 'inbox-list-phone.png') });
  });

  it('every inbox page passes an axe-core scan with no violations', async () => {
    // axe is injected as a script: the pages' CSP (script-src 'self') is bypassed for it.
    const page = await signedIn(tokens.alice, { bypassCSP: true });
    const some = (await store.pageRequests({ status: 'pending', limit: 1 })).items[0]!;
    const decided = (await store.pageRequests({ sort: 'decided', limit: 1 })).items[0]!;
    const paths = [
      '/',
      '/?q=z%C3%BCrich',
      `/requests/${some.id}`,
      `/requests/${decided.id}`,
      '/history',
      '/stats',
      '/audit',
      '/no-such-page',
      '/requests/apr-nope',
    ];
    const scan = async (target: Page, path: string) => {
      await target.goto(`${running.url}${path}`);
      await target.addScriptTag({ content: axeSource });
      const violations = await target.evaluate<string[]>(
        'axe.run().then((r) => r.violations.map((v) => v.id + ": " + v.help + " " + JSON.stringify(v.nodes.map((n) => n.target))))',
      );
      expect(violations, path).toEqual([]);
    };
    for (const path of paths) await scan(page, path);
    // The sign-in page, signed out; and the list on a phone.
    const context = await browser.newContext({ bypassCSP: true });
    contexts.push(context);
    await scan(await context.newPage(), '/login');
    const phone = await signedIn(tokens.alice, { viewport: { width: 390, height: 844 }, bypassCSP: true });
    await scan(phone, '/');
  });
});
