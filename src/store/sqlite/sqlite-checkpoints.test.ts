import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { expect, it } from 'vitest';
import { verifyAuditChain } from '../../core/audit.ts';
import {
  answerEvent,
  checkpoint,
  describeCheckpointStoreConformance,
} from '../conformance/checkpoint-store-conformance.ts';
import { answeredBy, portRequest } from '../conformance/fixtures.ts';
import { createSqliteStore } from './sqlite-store.ts';

describeCheckpointStoreConformance({
  name: 'sqlite',
  create: async () =>
    createSqliteStore({ path: join(mkdtempSync(join(tmpdir(), 'countersign-cp-sqlite-')), 'store.db') }),
  destroy: async (store) => rmSync(dirname(store.path), { recursive: true, force: true }),
  audit: (store) => store.listAudit(),
});

it('sqlite: an audit row the database refuses takes the answer with it; once it is allowed, both commit together', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-cp-sqlite-'));
  const path = join(dir, 'store.db');
  const store = createSqliteStore({ path });
  const answer = answeredBy('mona', 20);
  await store.saveCheckpoint(checkpoint('r', 0), null, { requests: [portRequest('r', 'req_1')] });
  const raw = (sql: string) => {
    const db = new DatabaseSync(path);
    try {
      db.exec(sql);
    } finally {
      db.close();
    }
  };
  try {
    // The answer's INSERT runs first in the transaction; the audit INSERT after it fails.
    raw(
      `CREATE TRIGGER audit_refuses BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'audit refused'); END`,
    );
    await expect(store.decide('req_1', answer, [answerEvent('mona')])).rejects.toThrow(/audit refused/);
    expect((await store.getApproval('req_1'))?.status).toBe('pending');
    expect(await store.listAudit()).toEqual([]);

    raw('DROP TRIGGER audit_refuses');
    expect((await store.decide('req_1', answer, [answerEvent('mona')])).won).toBe(true);
    expect((await store.getApproval('req_1'))?.decision).toMatchObject({ by: 'mona' });
    const entries = await store.listAudit({ session: 'wf.r' });
    expect(entries).toMatchObject([{ kind: 'request.decided', actor: 'mona', requestId: 'req_1' }]);
    expect(verifyAuditChain(await store.listAudit()).ok).toBe(true);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

it("sqlite: workflow state shares the agents' state table, and a damaged body names its row", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-cp-sqlite-'));
  const path = join(dir, 'store.db');
  const store = createSqliteStore({ path });
  try {
    await store.setState('bookstore', 'order:1040', { status: 'Delivered' });
    expect(await store.claimState('bookstore', 'order:1040', 'x')).toEqual({
      won: false,
      value: { status: 'Delivered' },
    });
    await store.saveCheckpoint(checkpoint('r', 0), null);
    const db = new DatabaseSync(path);
    db.prepare("UPDATE workflow_checkpoints SET body = '{\"trunc' WHERE id = 'cp-r-0'").run();
    db.close();
    await expect(store.latestCheckpoint('r')).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
    await expect(store.latestCheckpoint('r')).rejects.toThrow(/workflow_checkpoints\(id=cp-r-0\)/);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
