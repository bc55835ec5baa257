import { describe, expect, it } from 'vitest';
import { raiseCancel, type TestServer, testServer, tokens } from './helpers.ts';

const form = (fields: Record<string, string | string[]>) => {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(fields))
    for (const one of Array.isArray(value) ? value : [value]) params.append(key, one);
  return params.toString();
};

async function signIn(server: TestServer, token: string): Promise<string> {
  const response = await server.app.request('/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form({ token, next: '/' }),
  });
  return response.headers.get('set-cookie')!.split(';')[0]!;
}

async function page(server: TestServer, path: string, cookie: string) {
  const response = await server.app.request(path, { headers: { accept: 'text/html', cookie } });
  return { status: response.status, html: await response.text() };
}

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!;

describe('the inbox list, history and bulk decisions over HTTP (no browser)', () => {
  it('pages from the store: 50 to a page, a next link, the count of all; a stale cursor starts again', async () => {
    const server = testServer();
    for (let i = 0; i < 53; i++) await raiseCancel(server, `s-${i}`);
    const alice = await signIn(server, tokens.alice);
    const first = await page(server, '/', alice);
    expect(first.html).toContain('<span class="count" id="pending-count">53</span>');
    expect(first.html.match(/<tr id="apr_/g)).toHaveLength(50);
    expect(first.html).toContain('Showing 1–50 of <strong class="total">53</strong>');
    const next = /<a rel="next" href="([^"]+)"/.exec(first.html)![1]!.replaceAll('&amp;', '&');
    const second = await page(server, next, alice);
    expect(second.html.match(/<tr id="apr_/g)).toHaveLength(3);
    expect(second.html).toContain('Showing 51–53 of');
    expect(second.html).not.toContain('rel="next"');

    // A cursor of another order (or a mangled one) shows the first page, saying so.
    const restarted =
      'That page link was made for other filters or another order, or is out of date, so this is the first page.';
    const stale = await page(server, `${next.replace('after=', 'sort=newest&after=')}`, alice);
    expect(stale.status).toBe(200);
    expect(stale.html).toContain(restarted);
    expect(stale.html).toContain('Showing 1–50 of');
    const mangled = await page(server, '/?after=not-a-cursor', alice);
    expect(mangled.html).toContain(restarted);
    // The same link with another page size is the next page still: the size is no filter.
    const bigger = await page(server, `${next}&limit=25`, alice);
    expect(bigger.html).not.toContain(restarted);
    expect(bigger.html.match(/<tr id="apr_/g)).toHaveLength(3);
  });

  it('a page link under other filters (an edited search) shows the first page of those filters, saying so', async () => {
    const server = testServer();
    for (let i = 0; i < 3; i++) await raiseCancel(server, `s-${i}`);
    const alice = await signIn(server, tokens.alice);
    const first = await page(server, '/?q=order&limit=25', alice);
    expect(first.html).toContain('Showing 1–3 of');
    // Three waiting, 25 to a page: no next link of its own. One from a page of 1 instead.
    const firstOfOne = await server.call('GET', '/v1/requests?status=pending&text=order&limit=1', {
      as: 'alice',
    });
    const cursor = firstOfOne.headers.get('x-next-cursor') ?? '';
    expect(cursor).not.toBe('');
    // The same search and a cursor handed out for it: the page after it, no restart.
    const same = await page(server, `/?q=order&after=${cursor}&page=2`, alice);
    expect(same.html).not.toContain('That page link was made for other filters');
    expect(same.html.match(/<tr id="apr_/g)).toHaveLength(2);
    // The search edited in the address: the first page of the new search, and it says why.
    const edited = await page(server, `/?q=cancel&after=${cursor}&page=2`, alice);
    expect(edited.status).toBe(200);
    expect(edited.html).toContain(
      'That page link was made for other filters or another order, or is out of date, so this is the first page.',
    );
    expect(edited.html).toContain('Showing 1–3 of');
    expect(edited.html).toContain('(page 1)');
  });

  it('filters by tool and customer, partially and without case; an empty result says so', async () => {
    const server = testServer();
    await raiseCancel(server, 's-a');
    const alice = await signIn(server, tokens.alice);
    expect((await page(server, '/?tool=CANCEL', alice)).html).toContain('Showing 1–1 of');
    expect((await page(server, '/?customer=C-1', alice)).html).toContain('Showing 1–1 of');
    expect((await page(server, '/?q=order%201044', alice)).html).toContain('Showing 1–1 of');
    const none = await page(server, '/?tool=refund', alice);
    expect(none.html).toContain('No waiting request matches these filters.');
  });

  it('cuts a long search to 200 characters, never inside an emoji', async () => {
    const server = testServer();
    await raiseCancel(server, 's-a');
    const alice = await signIn(server, tokens.alice);
    // 1 + 250 emoji: 501 UTF-16 units, the 200th the first half of an emoji.
    const long = await page(server, `/?q=a${encodeURIComponent('😀'.repeat(250))}`, alice);
    expect(long.status).toBe(200);
    expect(long.html).toContain('No waiting request matches these filters.');
    expect(long.html).toContain(`value="a${'😀'.repeat(199)}"`);
  });

  it('bulk as the customer the requests act for: each is refused by the one rule, nothing is decided', async () => {
    const server = testServer();
    const ids = [await raiseCancel(server, 'c-1'), await raiseCancel(server, 'c-2')];
    // c-100 holds approver roles, but these cancels act for c-100 (decision-rights.ts).
    const customer = await signIn(server, tokens.customer);
    const csrf = csrfOf((await page(server, '/', customer)).html);
    const bulk = await server.app.request('/requests/bulk', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        cookie: customer,
      },
      body: form({ csrf, id: ids, verdict: 'approve', reason: 'Fine by me.' }),
    });
    const result = (await bulk.json()) as { ok: boolean; results: Array<{ ok: boolean; text: string }> };
    expect(result.ok).toBe(false);
    expect(result.results.map((r) => r.ok)).toEqual([false, false]);
    for (const id of ids) expect((await server.store.getApproval(id))?.status).toBe('pending');
    expect((await server.store.listAudit({})).filter((e) => e.kind === 'request.decided')).toEqual([]);
  });

  it('bulk: each selected request is decided on its own; a refusal is reported and stops none of the others', async () => {
    const server = testServer();
    const ids = [
      await raiseCancel(server, 'b-1'),
      await raiseCancel(server, 'b-2'),
      await raiseCancel(server, 'b-3'),
    ];
    const alice = await signIn(server, tokens.alice);
    const csrf = csrfOf((await page(server, '/', alice)).html);
    // One of them is decided by someone else first.
    const mia = await signIn(server, tokens.mia);
    const miaCsrf = csrfOf((await page(server, '/', mia)).html);
    await server.app.request(`/requests/${ids[1]}/decide`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: mia },
      body: form({ csrf: miaCsrf, verdict: 'reject', reason: 'Not this one.' }),
    });
    const bulk = await server.app.request('/requests/bulk', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        cookie: alice,
      },
      body: form({
        csrf,
        id: ids,
        verdict: 'reject',
        reason: 'Out of stock; support will call. Do not retry.',
      }),
    });
    expect(bulk.status).toBe(409);
    const result = (await bulk.json()) as {
      ok: boolean;
      text: string;
      results: Array<{ id: string; ok: boolean; text: string }>;
    };
    expect(result.text).toMatch(/^Rejected 2 of 3\. Not decided: /);
    expect(result.results.map((r) => r.ok)).toEqual([true, false, true]);
    expect(result.results[1]!.text).toMatch(
      /^Someone was quicker: mia rejected this at .* UTC\. Reason: “Not this one\.”/,
    );
    for (const id of [ids[0]!, ids[2]!]) {
      const row = await server.store.getApproval(id);
      expect(row?.decision).toMatchObject({
        by: 'alice',
        verdict: 'rejected',
        reason: 'Out of stock; support will call. Do not retry.',
      });
    }
    const decided = (await server.store.listAudit({})).filter((e) => e.kind === 'request.decided');
    expect(decided.map((e) => e.requestId).sort()).toEqual([...ids].sort());

    // Without a reason a bulk rejection is refused before anything is decided; no ids, the same.
    const again = await raiseCancel(server, 'b-4');
    const noReason = await server.app.request('/requests/bulk', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        cookie: alice,
      },
      body: form({ csrf, id: again, verdict: 'reject', reason: '' }),
    });
    expect(((await noReason.json()) as { text: string }).text).toContain('A rejection needs a reason');
    expect((await server.store.getApproval(again))?.status).toBe('pending');
    const forged = await server.app.request('/requests/bulk', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: alice },
      body: form({ csrf: 'forged', id: again, verdict: 'approve' }),
    });
    expect(forged.status).toBe(403);
    expect((await server.store.getApproval(again))?.status).toBe('pending');
  });

  it('history: partial, case-insensitive filters, counted; times in the zone the browser reported', async () => {
    const server = testServer();
    const id = await raiseCancel(server, 'h-1');
    const alice = await signIn(server, tokens.alice);
    const csrf = csrfOf((await page(server, '/', alice)).html);
    await server.app.request(`/requests/${id}/decide`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: alice },
      body: form({ csrf, verdict: 'reject', reason: 'Shipped already.' }),
    });
    const inTokyo = `${alice}; countersign_tz=Asia%2FTokyo`;
    const history = await page(server, '/history?tool=Cancel_', inTokyo);
    expect(history.html).toContain('Showing 1–1 of <strong class="total">1</strong>');
    expect(history.html).toContain('Times are in your time zone (Asia/Tokyo).');
    expect(history.html).toMatch(/\d{2}:\d{2} GMT\+9</);
    // A zone the runtime does not know is ignored: UTC, and the page says so.
    const bogus = await page(server, '/history', `${alice}; countersign_tz=%3Cscript%3E`);
    expect(bogus.html).toContain('Times are in UTC.');
    expect((await page(server, '/history?status=approved', alice)).html).toContain(
      'Nothing decided matches these filters.',
    );
  });

  it('a missing request and a missing page say where to look, in words for people', async () => {
    const server = testServer();
    const alice = await signIn(server, tokens.alice);
    const missing = await page(server, '/requests/apr_nothing', alice);
    expect(missing.status).toBe(404);
    expect(missing.html).toContain('There is no request apr_nothing here.');
    expect(missing.html).not.toContain('countersign pending');
    const nowhere = await page(server, '/nowhere', alice);
    expect(nowhere.status).toBe(404);
    expect(nowhere.html).toContain('There is no page at this address.');
  });
});
