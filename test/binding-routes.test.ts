import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { exportSession, importSession, type SessionExport } from '../src/agent/session-transfer.ts';
import { canonicalJson, sha256Hex } from '../src/core/canonical-json.ts';
import type { ContinuationQueue } from '../src/queue/continuation-queue.ts';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { bookstore, orderStatus } from './helpers/bookstore-agent.ts';

/**
 * Every route that acts on a stored request re-checks its binding (checkBinding): a row
 * edited after it was raised is INTEGRITY_VIOLATION, audited where it reached a store, and
 * nothing runs.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function sqliteBookstore(continuations?: ContinuationQueue) {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-binding-'));
  dirs.push(dir);
  const path = join(dir, 'store.db');
  const { agent, store } = bookstore({ store: createSqliteStore({ path }) });
  return { agent: continuations ? agent.with({ continuations }) : agent, store, path };
}

function editArgs(path: string, requestId: string): void {
  const db = new DatabaseSync(path);
  db.prepare(`UPDATE approvals SET args_json = '{"orderId":1043}' WHERE id = ?`).run(requestId);
  db.close();
}

const queued: ContinuationQueue = {
  enqueue: async () => undefined,
  work: async () => undefined,
  close: async () => undefined,
};

describe('an edited request row', () => {
  it('deciding: refused before the decision, audited, nothing runs', async () => {
    const { agent, store, path } = sqliteBookstore();
    const turn = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    const id = turn.approvals[0]!.id;
    editArgs(path, id);
    await expect(agent.approve(id, { by: 'alice' })).rejects.toMatchObject({
      code: 'INTEGRITY_VIOLATION',
      message: expect.stringContaining(`Request ${id} cannot be decided`),
    });
    expect((await store.getApproval(id))?.status).toBe('pending');
    const refused = (await store.listAudit()).filter((entry) => entry.kind === 'tamper.refused');
    expect(refused).toMatchObject([{ requestId: id, actor: 'alice', data: { problem: expect.any(String) } }]);
    expect(await store.listExecutions()).toEqual([]);
    expect(await orderStatus(store, 1043)).not.toBe('Cancelled');
    await store.close();
  });

  it('executing: edited after the decision, refused right before the run, audited, nothing runs', async () => {
    const { agent, store, path } = sqliteBookstore(queued);
    const turn = await agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    const id = turn.approvals[0]!.id;
    expect((await agent.approve(id, { by: 'alice' })).status).toBe('continuing');
    editArgs(path, id);
    await expect(agent.resume('s1')).rejects.toMatchObject({
      code: 'INTEGRITY_VIOLATION',
      message: expect.stringContaining(`Refused to run request ${id}`),
    });
    expect(await store.listExecutions()).toMatchObject([{ requestId: id, status: 'failed' }]);
    const refused = (await store.listAudit()).filter((entry) => entry.kind === 'tamper.refused');
    expect(refused).toMatchObject([{ requestId: id, actor: 'countersign' }]);
    expect(await orderStatus(store, 1043)).not.toBe('Cancelled');
    expect(await orderStatus(store, 1044)).not.toBe('Cancelled');
    await store.close();
  });

  it('importing: an edited request in a resealed file is refused, and nothing is written', async () => {
    const source = bookstore();
    const turn = await source.agent.chat('s1', 'Please cancel my order 1044.', { principal: 'c-100' });
    const id = turn.approvals[0]!.id;
    const file = JSON.parse(JSON.stringify(await exportSession(source.store, 's1'))) as SessionExport &
      Record<string, unknown>;
    // The forger edits the request and the waiting call alike, then recomputes the digest.
    file.approvals[0]!.argsJson = '{"orderId":1043}';
    file.session.batch!.calls[0]!.args = { orderId: 1043 };
    const { digest: _digest, ...content } = file;
    const resealed = { ...content, digest: sha256Hex(canonicalJson(content)) };
    const target = bookstore();
    await expect(
      importSession(target.store, resealed, { agents: ['bookstore'], trustUnsigned: true }),
    ).rejects.toMatchObject({
      code: 'INTEGRITY_VIOLATION',
      message: expect.stringContaining(`Cannot import request ${id}`),
    });
    expect(await target.store.getSession('s1')).toBeNull();
    expect(await target.store.getApproval(id)).toBeNull();
    expect(await target.store.listAudit()).toEqual([]);
  });
});
