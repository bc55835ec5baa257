import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchema, postgresForTests, storeUrl } from '../helpers/postgres.ts';
import { type ServeProcess, startServe } from '../helpers/serve-process.ts';
import { writeTempApp } from '../helpers/temp-app.ts';
import { browserMissing, launchChromium } from './browser-env.ts';

/**
 * Holds the first answer to `pattern` once the server has given it, until `release()`:
 * `answered` settles when the server has answered, so a test can change the world in between
 * (decide the request) and then let the page see the now stale answer. Later ones pass.
 */
async function holdFirstAnswer(page: Page, pattern: string) {
  let answeredNow: () => void = () => undefined;
  const answered = new Promise<void>((resolve) => {
    answeredNow = resolve;
  });
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held = false;
  await page.route(pattern, async (route) => {
    if (held) return route.continue();
    held = true;
    const response = await route.fetch();
    answeredNow();
    await released;
    await route.fulfill({ response });
  });
  return { answered, release };
}

const pg = await postgresForTests();

const tokens = 'svc:service:svc-token-123456,ann:support:ann-token-123456,max:manager:max-token-123456';

/**
 * Two real `countersign serve` processes on one PostgreSQL schema, and an inbox open on each:
 * ann (support) on the first, max (manager) on the second. A refund only support may decide
 * reminds after 1 s and escalates to managers after 6 s. Both store watchers see the same due
 * rows every pass; one of them fires each nudge, and both inboxes learn of it from their own
 * instance's live stream. Each page marks the row overdue, then escalated, once; the trail
 * holds one entry of each; and max, who could not decide it before, decides it from the
 * other instance's page.
 */
describe.skipIf(browserMissing || pg === null)(
  'a reminder and an escalation across two serve instances on PostgreSQL, seen in two inboxes in Chromium',
  () => {
    const schema = freshSchema('nudge_inbox');
    const closers: Array<() => Promise<void>> = [];
    let browser: Browser;
    let a: ServeProcess;
    let b: ServeProcess;

    beforeAll(async () => {
      const app = writeTempApp(
        'refunds-app',
        `
const refund = defineTool({
  name: 'refund_order',
  description: 'Refund an order.',
  input: {
    type: 'object',
    properties: { order: { type: 'integer' }, cents: { type: 'integer', minimum: 1 } },
    required: ['order', 'cents'],
    additionalProperties: false,
  },
  standing: false,
  role: 'support',
  ttl: '1h',
  remindAfter: '1s',
  escalateAfter: '6s',
  escalateTo: 'manager',
  effect: ({ order, cents }) => 'Refund ' + cents + ' cents on order ' + order + '.',
  execute: (args) => ({ ok: true, ...args }),
});

export const agents = [createAgent({ name: 'refunds', instructions: 'You refund orders.', tools: [refund] })];
`,
      );
      const env = { COUNTERSIGN_STORE: storeUrl(schema), COUNTERSIGN_APP: app, COUNTERSIGN_TOKENS: tokens };
      // One after the other: the first applies the migrations the second then finds done.
      a = await startServe(env);
      closers.push(() => a.stop());
      b = await startServe(env);
      closers.push(() => b.stop());
      browser = await launchChromium();
      closers.push(() => browser.close());
    }, 60_000);

    afterAll(async () => {
      for (const close of closers.reverse()) await close().catch(() => undefined);
      await dropSchema(schema);
    });

    const contexts: BrowserContext[] = [];
    closers.push(async () => {
      for (const context of contexts) await context.close().catch(() => undefined);
    });

    async function signedIn(base: string, token: string): Promise<Page> {
      const context = await browser.newContext({
        viewport: { width: 1280, height: 900 },
        timezoneId: 'Europe/Berlin',
      });
      contexts.push(context);
      const page = await context.newPage();
      await page.goto(`${base}/login`);
      await page.getByLabel('Approver token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${base}/`);
      return page;
    }

    // (A script as text: this project's types have no DOM.)
    const countDeliveries = `new Promise((opened) => {
      const seen = (window.nudgesSeen = []);
      const source = new EventSource('/v1/events');
      for (const type of ['approval.requested', 'request.reminder', 'request.escalated', 'approval.decided']) {
        source.addEventListener(type, (message) => {
          const data = JSON.parse(message.data);
          seen.push([type, data.requestId ?? data.approval?.id ?? '']);
        });
      }
      source.addEventListener('open', () => opened(), { once: true });
    })`;
    const delivered = (page: Page) => page.evaluate<Array<[string, string]>>('window.nudgesSeen');

    it('each inbox marks the row overdue, then escalated, once; a manager decides it from the other instance', async () => {
      const ann = await signedIn(a.base, 'ann-token-123456');
      const max = await signedIn(b.base, 'max-token-123456');

      // Each page also counts what its own instance's live stream delivers: a nudge sent twice
      // would be hidden by a redraw that looks the same, so the deliveries are counted too.
      for (const page of [ann, max]) await page.evaluate(countDeliveries);

      const posted = await fetch(`${a.base}/v1/sessions/refund-1/messages`, {
        method: 'POST',
        headers: { authorization: 'Bearer svc-token-123456', 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'use refund_order with order 1044 cents 2500', user: 'c-100' }),
      });
      expect(posted.status).toBe(200);
      const id = ((await posted.json()) as { approvals: Array<{ id: string }> }).approvals[0]!.id;

      const pages = [ann, max];
      // The new request arrives live in both lists, not yet overdue.
      for (const page of pages) await page.locator(`[id="${id}"]`).waitFor();
      // Max opens it: support's call, so he may not decide it yet.
      await max.locator(`[id="${id}"] a.open`).click();
      const maxPane = max.locator(`#pane [data-request="${id}"]`);
      await maxPane.waitFor();
      expect(await maxPane.getByRole('button', { name: 'Approve' }).count()).toBe(0);

      // The reminder, fired by whichever watcher got there first: overdue, not yet escalated.
      for (const page of pages) {
        await page.locator(`[id="${id}"].overdue:not(.escalated)`).waitFor({ timeout: 10_000 });
      }
      // Then the escalation: both rows drawn again, escalated.
      for (const page of pages) {
        await page.locator(`[id="${id}"].overdue.escalated`).waitFor({ timeout: 15_000 });
      }
      for (const page of pages) {
        const rows = page.locator(`#pending-list [id="${id}"]`);
        expect(await rows.count()).toBe(1);
        expect(await rows.locator('.overdue-badge').count()).toBe(1);
        expect(await rows.locator('.badge', { hasText: 'escalated' }).count()).toBe(1);
      }
      // Max's pane was drawn again by his instance's stream: it says so and now offers Approve.
      await maxPane
        .locator('.overdue-note')
        .getByText(/and was escalated/)
        .waitFor();
      await maxPane.getByText('It was escalated to manager.').waitFor();

      const trail = async () => {
        const response = await fetch(`${b.base}/v1/audit?session=refund-1`, {
          headers: { authorization: 'Bearer ann-token-123456' },
        });
        expect(response.status).toBe(200);
        const entries = (await response.json()) as Array<{
          kind: string;
          requestId?: string;
          actor?: string;
        }>;
        return entries.filter((entry) => entry.requestId === id);
      };
      const audit = async () => (await trail()).map((entry) => entry.kind);
      expect(await audit()).toEqual(['request.raised', 'request.reminder', 'request.escalated']);

      // Max decides it from the second instance's page; ann's page on the first learns of it.
      await maxPane.getByRole('button', { name: 'Approve' }).click();
      await max.locator('#arrivals', { hasText: /Approved/ }).waitFor();
      await ann
        .getByText(/Approved by max/)
        .first()
        .waitFor();
      const requestKinds = async () => (await audit()).filter((kind) => kind.startsWith('request.'));
      await expect
        .poll(requestKinds, { timeout: 10_000 })
        .toEqual(['request.raised', 'request.reminder', 'request.escalated', 'request.decided']);

      const seen = await fetch(`${a.base}/v1/requests/${id}`, {
        headers: { authorization: 'Bearer ann-token-123456' },
      });
      expect(await seen.json()).toMatchObject({ status: 'approved', escalatedTo: 'manager' });
      // The page drew each nudge once and no watcher fired one again: one entry of each.
      const kinds = await audit();
      expect(kinds.filter((kind) => kind === 'request.reminder')).toHaveLength(1);
      expect(kinds.filter((kind) => kind === 'request.escalated')).toHaveLength(1);
      expect((await trail()).find((entry) => entry.kind === 'request.decided')).toMatchObject({
        actor: 'max',
      });
      // Each instance's stream delivered each nudge once, in order, up to the decision.
      for (const page of [ann, max]) {
        await expect
          .poll(async () => (await delivered(page)).map(([type]) => type).at(-1), { timeout: 10_000 })
          .toBe('approval.decided');
        expect(await delivered(page)).toEqual([
          ['approval.requested', id],
          ['request.reminder', id],
          ['request.escalated', id],
          ['approval.decided', id],
        ]);
      }
      expect(a.stderr() + b.stderr()).not.toContain('could not send reminders');
    }, 40_000);

    it('a row fetched while its request waited is not drawn once the stream says it was decided', async () => {
      const ann = await signedIn(a.base, 'ann-token-123456');
      await ann.evaluate(countDeliveries);
      const pending = ann.locator('#pending-count');
      const before = await pending.textContent();
      // The first arrival's row is held after the server answered (the request still waited)
      // until the page has heard of its decision; the rest pass.
      const { answered: rowFetched, release } = await holdFirstAnswer(ann, '**/inbox/rows/**');

      const raise = async (session: string, order: number) => {
        const posted = await fetch(`${b.base}/v1/sessions/${session}/messages`, {
          method: 'POST',
          headers: { authorization: 'Bearer svc-token-123456', 'content-type': 'application/json' },
          body: JSON.stringify({ text: `use refund_order with order ${order} cents 900`, user: 'c-200' }),
        });
        expect(posted.status).toBe(200);
        return ((await posted.json()) as { approvals: Array<{ id: string }> }).approvals[0]!.id;
      };
      // Raised on the other instance; ann's page on the first learns of it from the store.
      const stale = await raise('refund-2', 2001);
      await rowFetched;
      const decided = await fetch(`${b.base}/v1/requests/${stale}/decision`, {
        method: 'POST',
        headers: { authorization: 'Bearer ann-token-123456', 'content-type': 'application/json' },
        body: JSON.stringify({ approved: false, reason: 'Duplicate refund.' }),
      });
      expect(decided.status).toBe(200);
      await expect
        .poll(async () =>
          (await delivered(ann)).some(([type, id]) => type === 'approval.decided' && id === stale),
        )
        .toBe(true);
      release();

      // A later arrival is drawn after the held row was handled: then the list holds it alone.
      const next = await raise('refund-3', 2002);
      await ann.locator(`[id="${next}"]`).waitFor();
      expect(await ann.locator(`[id="${stale}"]`).count()).toBe(0);
      expect(await pending.textContent()).toBe(String(Number(before) + 1));
      expect(await ann.locator('#pending-list tr.row').count()).toBe(Number(before) + 1);
      // Leave nothing waiting for the next test's list.
      const cleared = await fetch(`${b.base}/v1/requests/${next}/decision`, {
        method: 'POST',
        headers: { authorization: 'Bearer ann-token-123456', 'content-type': 'application/json' },
        body: JSON.stringify({ approved: false, reason: 'Test over.' }),
      });
      expect(cleared.status).toBe(200);
    }, 30_000);

    it('a pane answer that comes back after the decision does not cover the decided pane', async () => {
      const ann = await signedIn(a.base, 'ann-token-123456');
      const raise = async (session: string, order: number) => {
        const posted = await fetch(`${a.base}/v1/sessions/${session}/messages`, {
          method: 'POST',
          headers: { authorization: 'Bearer svc-token-123456', 'content-type': 'application/json' },
          body: JSON.stringify({ text: `use refund_order with order ${order} cents 700`, user: 'c-300' }),
        });
        expect(posted.status).toBe(200);
        return ((await posted.json()) as { approvals: Array<{ id: string }> }).approvals[0]!.id;
      };
      const id = await raise('refund-4', 4001);
      await ann.locator(`[id="${id}"] a.open`).click();
      const pane = ann.locator(`#pane [data-request="${id}"]`);
      await pane.getByRole('button', { name: 'Approve' }).waitFor();
      // The reminder has redrawn the pane: the next answer it asks for is the escalation's.
      await pane.locator('.overdue-note').waitFor({ timeout: 10_000 });

      // That answer is held once the server gave it (the request still waited).
      const { answered: paneFetched, release } = await holdFirstAnswer(ann, '**/inbox/pane/**');
      const api = (path: string, body: unknown) =>
        fetch(`${b.base}${path}`, {
          method: 'POST',
          headers: { authorization: 'Bearer ann-token-123456', 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      // Escalated by whichever watcher gets there, then rejected on the other instance by API.
      await paneFetched;
      expect(
        (await api(`/v1/requests/${id}/decision`, { approved: false, reason: 'Wrong order.' })).status,
      ).toBe(200);
      await ann.locator('#pane .live-notice', { hasText: 'It left the list.' }).waitFor();
      const answered = ann.waitForEvent('requestfinished', (request) =>
        request.url().includes('/inbox/pane/'),
      );
      release();
      await answered;
      // Whatever the page does with the late answer runs as it arrives, before this round trip.
      await ann.evaluate('new Promise((done) => setTimeout(done))');
      expect(await pane.getByRole('button', { name: 'Approve' }).count()).toBe(0);
      expect(await ann.locator('#pane .live-notice').textContent()).toContain('It left the list.');
    }, 30_000);
  },
);
