import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { supportWorkflow } from '../../examples/bookstore/app.ts';
import { refundWorkflow } from '../../examples/bookstore/refund-workflow.ts';
import { createSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { orderStatus } from '../helpers/bookstore-agent.ts';
import { type TestServer, testServer } from './helpers.ts';

/**
 * POST /v1/customers/{id}/erase against a real SQLite file: only an admin; pending requests
 * expired first and never run; a workflow run that waited on one gone; nothing of the
 * customer readable in the file; the chain verifies with their entries shown as erased;
 * erasing twice, an unknown id and a malformed one; an erasure racing a decision.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function setup(): { server: TestServer; store: SqliteStore; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-erase-'));
  const path = join(dir, 'store.db');
  const store = createSqliteStore({ path });
  const server = testServer({ store, checkpoints: store, workflows: [refundWorkflow, supportWorkflow] });
  cleanups.push(async () => {
    await server.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { server, store, path };
}

async function chat(server: TestServer, session: string, user: string, text: string) {
  const turn = await server.call('POST', `/v1/sessions/${session}/messages`, {
    as: 'svc',
    body: { text, user, agent: 'bookstore' },
  });
  expect(turn.status).toBe(200);
  return turn.json as { approvals: Array<{ id: string }> };
}

const fileText = (path: string) => readFileSync(path).toString('latin1');

describe('erasing a customer over HTTP', () => {
  it('only an admin may; their data is gone everywhere, their pending requests never run, the chain verifies', async () => {
    const { server, store, path } = setup();
    const raised = (
      await chat(server, 's1', 'c-100', 'Please cancel my order 1044. Deliver to 12 Elm Street.')
    ).approvals[0]! as { id: string; effect: string };
    const toolCall = raised.id;
    const started = await server.call('POST', '/v1/runs', {
      as: 'svc',
      body: { workflow: 'refund', run: 'refund-1040', input: 1040, user: 'c-100' },
    });
    expect(started.status).toBe(200);
    const port = started.json.requests[0].id as string;
    const effects = [raised.effect, started.json.requests[0].effect as string];
    await chat(server, 's2', 'c-200', 'Hello from Juniper Lane.');

    const refused = await server.call('POST', '/v1/customers/c-100/erase', { as: 'mia' });
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe('FORBIDDEN');

    const erased = await server.call('POST', '/v1/customers/c-100/erase', { as: 'admin' });
    expect(erased.status).toBe(200);
    expect(erased.json).toMatchObject({ principal: 'c-100', by: 'dana', erased: true, keyForgotten: false });
    expect(erased.json.expired.sort()).toEqual([toolCall, port].sort());
    expect(erased.json.counts).toMatchObject({ sessions: 1, runs: 1 });
    expect(erased.json.counts.requests).toBeGreaterThanOrEqual(2);

    // Expired first, then removed: no decision can reach them, nothing ran.
    for (const id of [toolCall, port]) {
      const decided = await server.call('POST', `/v1/requests/${id}/decision`, {
        as: 'mia',
        body: id === port ? { response: { approved: true, note: 'ok' } } : { approved: true },
      });
      expect(decided.status).toBe(404);
    }
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
    expect(await store.getState('bookstore', 'refund:1040')).toBeUndefined();
    expect(await store.latestCheckpoint('refund-1040')).toBeNull();

    const verify = await server.call('GET', '/v1/audit/verify', { as: 'alice' });
    expect(verify.json).toMatchObject({ ok: true });
    expect(verify.json.erased).toBe(erased.json.counts.auditEntries);
    const audit = (await server.call('GET', '/v1/audit', { as: 'alice' })).json as Array<
      Record<string, unknown>
    >;
    const last = audit.at(-1)!;
    expect(last).toMatchObject({ kind: 'principal.erased', actor: 'dana', data: { principal: 'c-100' } });
    expect(audit.filter((entry) => entry.erasedAt !== undefined)).toHaveLength(
      erased.json.counts.auditEntries,
    );
    expect(JSON.stringify(audit)).not.toContain('12 Elm Street');

    // Nothing of theirs left in the file (deleted pages zeroed, WAL truncated); c-200's stays.
    const raw =
      fileText(path) +
      (() => {
        try {
          return fileText(`${path}-wal`);
        } catch {
          return '';
        }
      })();
    expect(raw).not.toContain('12 Elm Street');
    for (const effect of effects) expect(raw).not.toContain(effect);
    expect(raw).toContain('Juniper Lane');
  });

  it('erasing twice, an unknown customer and a malformed id', async () => {
    const { server } = setup();
    await chat(server, 's1', 'c-100', 'Please cancel my order 1044.');
    expect((await server.call('POST', '/v1/customers/c-100/erase', { as: 'admin' })).json.erased).toBe(true);
    const again = await server.call('POST', '/v1/customers/c-100/erase', { as: 'admin' });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ erased: false, expired: [] });
    const unknown = await server.call('POST', '/v1/customers/nobody-ever/erase', { as: 'admin' });
    expect(unknown.json.erased).toBe(false);
    const bad = await server.call('POST', `/v1/customers/${encodeURIComponent('bad id!')}/erase`, {
      as: 'admin',
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('INVALID_INPUT');
    // Only the one erasure that found something is in the trail.
    const audit = (await server.call('GET', '/v1/audit', { as: 'alice' })).json as Array<{ kind: string }>;
    expect(audit.filter((entry) => entry.kind === 'principal.erased')).toHaveLength(1);
    expect((await server.call('GET', '/v1/audit/verify', { as: 'alice' })).json.ok).toBe(true);
  });

  it('an erasure racing a decision: either the decision came first or the request expired, never a run after', async () => {
    for (let round = 0; round < 4; round++) {
      const { server, store } = setup();
      const id = (await chat(server, `s${round}`, 'c-100', 'Please cancel my order 1044.')).approvals[0]!.id;
      const [decided, erased] = await Promise.all([
        server.call('POST', `/v1/requests/${id}/decision`, { as: 'mia', body: { approved: true } }),
        server.call('POST', '/v1/customers/c-100/erase', { as: 'admin' }),
      ]);
      expect(erased.status).toBe(200);
      const won = erased.json.expired.includes(id);
      expect(won || erased.json.decidedFirst.includes(id)).toBe(true);
      if (won) {
        expect(decided.status).not.toBe(200);
        expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
      }
      // Either way, nothing of theirs is left to read, and the trail holds.
      expect(await store.getApproval(id)).toBeNull();
      expect(await store.listSessions()).toEqual([]);
      expect((await server.call('GET', '/v1/audit/verify', { as: 'alice' })).json.ok).toBe(true);
      await cleanups.pop()!();
    }
  });
});

describe("serve's retention schedule", () => {
  it('purges finished sessions past their period and keeps the waiting one; audited once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-retention-'));
    const store = createSqliteStore({ path: join(dir, 'store.db') });
    const clock = { at: new Date('2026-12-01T10:00:00Z') };
    const server = testServer({
      store,
      now: () => clock.at,
      retention: { policy: { sessions: 86_400_000, requests: 86_400_000 }, intervalMs: 0 },
    });
    cleanups.push(async () => {
      await server.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const waiting = (await chat(server, 's-wait', 'c-100', 'Please cancel my order 1044.')).approvals[0]!.id;
    await chat(server, 's-done', 'c-200', "What's the status of order 1045?");
    // Written now (the store's clock is the real one): a day later both are past the period.
    clock.at = new Date(Date.now() + 2 * 86_400_000);
    const report = await server.purge();
    expect(report?.counts).toMatchObject({ sessions: 1, requests: 0 });
    expect(await store.getSession('s-done')).toBeNull();
    expect(await store.getSession('s-wait')).not.toBeNull();
    expect((await store.getApproval(waiting))?.status).toBe('pending');
    expect((await server.purge())?.counts).toEqual({ sessions: 0, runs: 0, requests: 0, auditEntries: 0 });
    const audit = await store.listAudit();
    expect(audit.filter((entry) => entry.kind === 'retention.purged')).toHaveLength(1);
    expect(audit.at(-1)).toMatchObject({ actor: 'countersign', data: { sessions: 1 } });
  });
});

describe('an entry marked erased by hand', () => {
  it('fails verification: no erasure or purge at that time accounts for it', async () => {
    const { server, store, path } = setup();
    await store.appendAudit(
      [
        {
          kind: 'tamper.ignored',
          session: null,
          requestId: null,
          actor: 'x',
          data: { fields: ['args'], sent: '{}', storedArgsHash: 'h' },
        },
      ],
      new Date().toISOString(),
    );
    await chat(server, 's1', 'c-100', 'Please cancel my order 1044.');
    const erased = await server.call('POST', '/v1/customers/c-100/erase', { as: 'admin' });
    expect((await server.call('GET', '/v1/audit/verify', { as: 'alice' })).json.ok).toBe(true);
    const edit = (sql: string, ...values: string[]) => {
      const db = new DatabaseSync(path);
      try {
        db.prepare(sql).run(...values);
      } finally {
        db.close();
      }
    };
    // Erased "at the same time" as the real erasure: one more than it counted.
    edit(`UPDATE audit SET data = '{}', erased_at = ? WHERE seq = 1`, erased.json.at);
    const forged = await server.call('GET', '/v1/audit/verify', { as: 'alice' });
    // Named at the entry where the count runs over (the erasure's own entries come after seq 1).
    expect(forged.json).toMatchObject({ ok: false });
    expect(forged.json.problem).toContain('no erasure or purge at that time accounts for it');
    // Erasing the erasure's own entry is caught too.
    edit(
      `UPDATE audit SET erased_at = NULL, data = ? WHERE seq = 1`,
      '{"fields":["args"],"sent":"{}","storedArgsHash":"h"}',
    );
    expect((await server.call('GET', '/v1/audit/verify', { as: 'alice' })).json.ok).toBe(true);
    edit(`UPDATE audit SET data = '{}', erased_at = at WHERE kind = 'principal.erased'`);
    expect((await server.call('GET', '/v1/audit/verify', { as: 'alice' })).json.ok).toBe(false);
    // The reader's word for a destroyed key is not a value the column may hold.
    edit(`UPDATE audit SET data = '{}', erased_at = 'key-destroyed' WHERE seq = 1`);
    const damaged = await server.call('GET', '/v1/audit/verify', { as: 'alice' });
    expect(damaged.json.error.code).toBe('CORRUPT_DATA');
  });
});
