import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { createAgent } from '../../src/agent/create-agent.ts';
import { fireDueNudges } from '../../src/requests/fire-nudges.ts';
import type { ServerOptions } from '../../src/server/create-server.ts';
import type { RequestTimers } from '../../src/store/ports/request-timers.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { defineTool } from '../../src/tools/define-tool.ts';
import { scriptModel } from '../helpers/script-model.ts';
import { type TestServer, testServer } from './helpers.ts';
import { receiver } from './webhook-receiver.ts';

/**
 * An attacker's pass over reminders, escalation, expiry warnings and claims, over real HTTP on
 * a real SQLite file (and a second connection to it standing in for a second process): nothing
 * widens who may decide or claim, nothing fires twice, nothing fires after a decision.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const MINUTE = 60_000;

/** Support decides; the reminder and the expiry warning fall at the same moment (1h of 2h). */
const refundTool = defineTool({
  name: 'refund_order',
  description: 'Refund an order.',
  input: z.object({ amount: z.number() }),
  role: 'support',
  ttl: '2h',
  remindAfter: '1h',
  warnBefore: '1h',
  execute: ({ amount }) => ({ refunded: amount }),
});

/** Seniors decide; after an hour it escalates to managers (mia). */
const wireTool = defineTool({
  name: 'wire_money',
  description: 'Send money.',
  input: z.object({ amount: z.number() }),
  role: 'senior',
  ttl: '2h',
  escalateAfter: '1h',
  escalateTo: 'manager',
  execute: ({ amount }) => ({ sent: amount }),
});

const refundFirst = [
  [{ tool: 'refund_order', args: { amount: 12 } }],
  ['Done.'],
  [{ tool: 'wire_money', args: { amount: 500 } }],
  ['Sent.'],
];

function setup(
  script: Parameters<typeof scriptModel>[0] = refundFirst,
  overrides: Pick<Partial<ServerOptions>, 'webhook'> = {},
) {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-timer-attacks-'));
  dirs.push(dir);
  const path = join(dir, 'store.db');
  const store = createSqliteStore({ path });
  let offset = 0;
  const now = () => new Date(Date.now() + offset);
  const desk = createAgent({
    name: 'desk',
    instructions: 'Refunds and wires.',
    tools: [refundTool, wireTool],
    model: scriptModel(script),
    now,
  });
  const server = testServer({
    store,
    now,
    agents: [desk],
    workflows: [refundWorkflow],
    checkpoints: store,
    ...overrides,
  });
  return {
    store,
    path,
    server,
    now,
    advance: (ms: number) => {
      offset += ms;
    },
  };
}

async function raise(server: TestServer, session: string, text: string): Promise<string> {
  const turn = await server.call('POST', `/v1/sessions/${session}/messages`, {
    as: 'svc',
    body: { text, user: 'c-100', agent: 'desk' },
  });
  expect(turn.status).toBe(200);
  return turn.json.approvals[0].id as string;
}

const entries = async (store: Store, id: string) =>
  (await store.listAudit()).filter((entry) => entry.requestId === id).map((entry) => entry.kind);

const edit = (path: string, sql: string, ...values: (string | null)[]) => {
  const db = new DatabaseSync(path);
  db.prepare(sql).run(...values);
  db.close();
};

describe('two processes racing a nudge', () => {
  it('nudges due at the same moment fire once each, however the two processes interleave', async () => {
    const { store, path, server, now, advance } = setup();
    const id = await raise(server, 'r1', 'Refund 12.');
    advance(61 * MINUTE);
    // Process B (its own connection to the file) reads the due row, then stalls.
    const other = createSqliteStore({ path });
    const stale = await other.listNudgesDue({ at: now().toISOString(), limit: 200 });
    expect(stale.map((row) => row.id)).toEqual([id]);
    const processB: RequestTimers = {
      listNudgesDue: async () => stale,
      advanceNudge: (...args) => other.advanceNudge(...args),
      changeClaim: (...args) => other.changeClaim(...args),
    };
    // Process A fires; right after its first compare-and-set wins, B wakes and fires what it read.
    let woken = false;
    const processA: RequestTimers = {
      listNudgesDue: (query) => store.listNudgesDue(query),
      changeClaim: (...args) => store.changeClaim(...args),
      async advanceNudge(...args) {
        const won = await store.advanceNudge(...args);
        if (won !== null && !woken) {
          woken = true;
          await fireDueNudges({ store: processB, now: now() });
        }
        return won;
      },
    };
    await fireDueNudges({ store: processA, now: now() });
    expect(woken).toBe(true);
    expect(await entries(store, id)).toEqual(['request.raised', 'request.reminder', 'request.expiring']);
    await server.watch();
    expect(await entries(store, id)).toEqual(['request.raised', 'request.reminder', 'request.expiring']);
    other.close?.();
  });
});

describe('a decision racing a reminder', () => {
  it('a decided request gets no reminder, though a process read it as due before the decision', async () => {
    const { store, path, server, now, advance } = setup();
    const id = await raise(server, 'r1', 'Refund 12.');
    advance(61 * MINUTE);
    const other = createSqliteStore({ path });
    const stale = await other.listNudgesDue({ at: now().toISOString(), limit: 200 });
    expect(stale.map((row) => row.id)).toEqual([id]);
    const decided = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(decided.status).toBe(200);
    const fired = await fireDueNudges({
      store: { ...other, listNudgesDue: async () => stale },
      now: now(),
    });
    expect(fired).toEqual([]);
    await server.watch();
    expect(await entries(store, id)).not.toContain('request.reminder');
    expect(await entries(store, id)).not.toContain('request.expiring');
    other.close?.();
  });
});

describe('an edited row', () => {
  it('an escalated_to set before the escalation is due does not let the escalation role decide or claim early', async () => {
    const { path, server, advance } = setup([[{ tool: 'wire_money', args: { amount: 500 } }], ['Sent.']]);
    const id = await raise(server, 'w1', 'Wire 500.');
    // Someone with the database file writes the configured role in before its time.
    edit(path, "UPDATE approvals SET escalated_to = 'manager' WHERE id = ?", id);
    advance(10 * MINUTE);
    const early = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'mia',
      body: { approved: true },
    });
    expect(early.status).toBe(403);
    expect(early.json.error.message).toContain('needs the senior role');
    expect((await server.call('POST', `/v1/requests/${id}/claim`, { as: 'mia' })).status).toBe(403);
    expect((await server.call('GET', `/v1/requests/${id}`, { as: 'mia' })).json.escalatedTo).toBeNull();
    // Once the hour has passed (and the escalation fired), mia may.
    advance(51 * MINUTE);
    await server.watch();
    expect((await server.call('GET', `/v1/requests/${id}`, { as: 'mia' })).json.escalatedTo).toBe('manager');
    const decided = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'mia',
      body: { approved: true },
    });
    expect(decided.status).toBe(200);
  });

  it('nudges edited back to unsent fire again in the trail, but reach a webhook receiver once (one delivery id)', async () => {
    const hook = await receiver(0);
    const { store, path, server, advance } = setup(refundFirst, {
      webhook: { url: hook.url, secret: 's3cret-s3cret-s3cret', retryDelaysMs: [20] },
    });
    try {
      const id = await raise(server, 'r1', 'Refund 12.');
      advance(61 * MINUTE);
      await server.watch();
      await server.webhooksIdle();
      const sent = (await store.getApproval(id))?.nudges;
      expect(sent?.remindedAt).not.toBeNull();
      // Someone resets the reminder in the file, so the due-query offers it again.
      edit(
        path,
        'UPDATE approvals SET nudges = ?, next_nudge_at = ? WHERE id = ?',
        JSON.stringify({ ...sent, remindedAt: null, expiringSentAt: null }),
        sent?.remindAt ?? null,
        id,
      );
      await server.watch();
      await server.webhooksIdle();
      expect((await entries(store, id)).filter((kind) => kind === 'request.reminder')).toHaveLength(2);
      const types = hook.received.map((delivery) => JSON.parse(delivery.body).type as string);
      expect(types.filter((type) => type === 'request.reminder')).toHaveLength(1);
      expect(types.filter((type) => type === 'request.expiring')).toHaveLength(1);
    } finally {
      await server.close();
      await hook.close();
    }
  });

  it('a claim written for the raiser or the customer gives them nothing: no renewal, and others still decide', async () => {
    const { path, server, now } = setup();
    const id = await raise(server, 'r1', 'Refund 12.');
    const until = new Date(now().getTime() + 30 * MINUTE).toISOString();
    edit(path, 'UPDATE approvals SET claim_by = ?, claim_until = ? WHERE id = ?', 'c-100', until, id);
    const renew = await server.call('POST', `/v1/requests/${id}/claim`, { as: 'customer' });
    expect(renew.status).toBe(403);
    // The edited claim blocks nobody's decision (a claim never does).
    const decided = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(decided.status).toBe(200);
  });

  it('a claim_until edited into the past is free for the next approver', async () => {
    const { path, server, now } = setup();
    const id = await raise(server, 'r1', 'Refund 12.');
    expect((await server.call('POST', `/v1/requests/${id}/claim`, { as: 'alice' })).status).toBe(200);
    const past = new Date(now().getTime() - MINUTE).toISOString();
    edit(path, 'UPDATE approvals SET claim_until = ? WHERE id = ?', past, id);
    const taken = await server.call('POST', `/v1/requests/${id}/claim`, { as: 'mia' });
    expect(taken.status).toBe(200);
    expect(taken.json.claim.by).toBe('mia');
  });
});

describe('claims under attack', () => {
  it('bad terms are 400 with nothing claimed; decided, expired and unknown requests cannot be claimed', async () => {
    const { store, server, advance } = setup();
    const id = await raise(server, 'r1', 'Refund 12.');
    for (const term of [
      -5,
      0,
      1e308,
      '1e3',
      '9999h',
      'soon',
      '',
      null,
      true,
      { h: 1 },
      '-1m',
      ' 9h ',
      '1ms',
      0.5,
      '999ms',
    ]) {
      const refused = await server.call('POST', `/v1/requests/${id}/claim`, {
        as: 'alice',
        body: { for: term },
      });
      expect(refused.status, JSON.stringify(term)).toBe(400);
      expect(refused.json.error.code).toBe('INVALID_INPUT');
    }
    // A body sent without a content type is refused, not dropped for the 15-minute default.
    const untyped = await server.call('POST', `/v1/requests/${id}/claim`, {
      as: 'alice',
      raw: '{"for":"2h"}',
      headers: { 'content-type': '' },
    });
    expect(untyped.status).toBe(400);
    expect(untyped.json.error.code).toBe('INVALID_INPUT');
    const extra = await server.call('POST', `/v1/requests/${id}/claim`, {
      as: 'alice',
      body: { for: '5m', by: 'mia' },
    });
    expect(extra.status).toBe(400);
    expect(await entries(store, id)).not.toContain('request.claimed');

    expect((await server.call('POST', '/v1/requests/apr_nope/claim', { as: 'alice' })).status).toBe(404);
    expect((await server.call('POST', '/v1/requests/apr_nope/release', { as: 'alice' })).status).toBe(404);

    // Someone else's claim: neither taken nor given back.
    expect((await server.call('POST', `/v1/requests/${id}/claim`, { as: 'mia' })).status).toBe(200);
    const taken = await server.call('POST', `/v1/requests/${id}/claim`, { as: 'alice' });
    expect(taken.status).toBe(409);
    expect(taken.json.error.code).toBe('CLAIMED');
    const released = await server.call('POST', `/v1/requests/${id}/release`, { as: 'alice' });
    expect(released.status).toBe(409);
    expect((await server.call('GET', `/v1/requests/${id}`, { as: 'alice' })).json.claim.by).toBe('mia');

    const decided = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(decided.status).toBe(200);
    const late = await server.call('POST', `/v1/requests/${id}/claim`, { as: 'alice' });
    expect(late.status).toBe(409);
    expect(late.json.error.code).toBe('ALREADY_DECIDED');
    expect((await server.call('POST', `/v1/requests/${id}/release`, { as: 'mia' })).json.error.code).toBe(
      'ALREADY_DECIDED',
    );

    const wire = await raise(server, 'w1', 'Wire 500.');
    advance(3 * 60 * MINUTE);
    const expired = await server.call('POST', `/v1/requests/${wire}/claim`, { as: 'mia' });
    expect(expired.json.error.code).toBe('EXPIRED');
    expect((await entries(store, wire)).filter((kind) => kind === 'request.claimed')).toEqual([]);
  });
});

describe('deciding what someone else holds', () => {
  it("records the holder's claim in the decision's audit entry; one's own claim is not noted", async () => {
    const { store, server } = setup();
    const id = await raise(server, 'r1', 'Refund 12.');
    expect((await server.call('POST', `/v1/requests/${id}/claim`, { as: 'mia' })).status).toBe(200);
    const decided = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'alice',
      body: { approved: true },
    });
    expect(decided.status).toBe(200);
    const entry = (await store.listAudit()).find(
      (candidate) => candidate.kind === 'request.decided' && candidate.requestId === id,
    );
    expect(entry?.data).toMatchObject({ claimedBy: 'mia' });
    expect(typeof entry?.data.claimedUntil).toBe('string');
  });

  it('a decision by the holder, or with no live claim, notes none', async () => {
    const { store, server } = setup();
    const id = await raise(server, 'r1', 'Refund 12.');
    expect((await server.call('POST', `/v1/requests/${id}/claim`, { as: 'alice' })).status).toBe(200);
    expect(
      (await server.call('POST', `/v1/requests/${id}/decision`, { as: 'alice', body: { approved: true } }))
        .status,
    ).toBe(200);
    const entry = (await store.listAudit()).find(
      (candidate) => candidate.kind === 'request.decided' && candidate.requestId === id,
    );
    expect(entry?.data).not.toHaveProperty('claimedBy');
  });
});

describe('workflow port requests', () => {
  async function startRefund(server: TestServer): Promise<string> {
    const run = await server.call('POST', '/v1/runs', {
      as: 'svc',
      body: { workflow: 'refund', run: 'refund-1040', input: 1040, user: 'c-300' },
    });
    expect(run.status).toBe(200);
    return run.json.requests[0].id as string;
  }

  it('a required_role edited down to support lets no support approver claim (or answer) a manager port', async () => {
    const { path, server } = setup();
    const id = await startRefund(server);
    edit(path, "UPDATE approvals SET required_role = 'support' WHERE id = ?", id);
    const claimed = await server.call('POST', `/v1/requests/${id}/claim`, { as: 'alice' });
    expect(claimed.status).toBe(403);
    expect(claimed.json.error.message).toContain('manager');
    const answered = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'alice',
      body: { response: { approved: true, note: 'ok' } },
    });
    expect(answered.status).toBe(403);
  });

  it('an escalated_to written into a port row shows as no escalation, as the answer judges it', async () => {
    const { path, server } = setup();
    const id = await startRefund(server);
    // The refund port escalates nowhere: no value in the row makes it escalated.
    edit(path, "UPDATE approvals SET escalated_to = 'support' WHERE id = ?", id);
    expect((await server.call('GET', `/v1/requests/${id}`, { as: 'mia' })).json.escalatedTo).toBeNull();
    const listed = await server.call('GET', '/v1/requests', { as: 'mia' });
    expect(listed.json.find((view: { id: string }) => view.id === id)?.escalatedTo).toBeNull();
  });

  it("an answer over someone else's claim records the holder in request.decided", async () => {
    const { store, server } = setup();
    const id = await startRefund(server);
    expect((await server.call('POST', `/v1/requests/${id}/claim`, { as: 'mia' })).status).toBe(200);
    const answered = await server.call('POST', `/v1/requests/${id}/decision`, {
      as: 'customer',
      body: { response: { approved: true, note: 'Photo checked.' } },
    });
    expect(answered.status).toBe(200);
    const entry = (await store.listAudit()).find(
      (candidate) => candidate.kind === 'request.decided' && candidate.requestId === id,
    );
    expect(entry?.data).toMatchObject({ kind: 'port', verdict: 'answered', claimedBy: 'mia' });
  });
});
