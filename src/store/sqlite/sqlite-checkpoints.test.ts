import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { expect, it } from 'vitest';
import {
  checkpoint,
  describeCheckpointStoreConformance,
} from '../conformance/checkpoint-store-conformance.ts';
import { createSqliteStore } from './sqlite-store.ts';

describeCheckpointStoreConformance('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-cp-sqlite-'));
  return {
    store: createSqliteStore({ path: join(dir, 'store.db') }),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
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
