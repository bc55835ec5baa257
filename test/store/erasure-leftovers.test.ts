import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { erasePrincipal } from '../../src/erasure/erase-principal.ts';
import { openStore } from '../../src/store/open-store.ts';
import { bookstore } from '../helpers/bookstore-agent.ts';

/**
 * Without encryption at rest, erasure must still leave none of the customer's words in the
 * SQLite file or its WAL. A request decided before the erasure had its row rewritten (status,
 * decision): the old version stayed in the page's free space, where the erasure's own
 * secure_delete never reached, until the store zeroed freed space from open
 * (secure_delete = FAST). This failed before that with the effect text still in the file.
 */
describe('SQLite erasure without encryption leaves no old row versions behind', () => {
  it("requests decided before the erasure: none of the customer's words stay in the file or the WAL", async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'countersign-leftovers-')), 'store.db');
    const store = await openStore(`sqlite:${path}`, { env: {} });
    const { agent } = bookstore({ store });
    for (let i = 0; i < 3; i++) {
      const turn = await agent.chat(`s${i}`, 'Please cancel my order 1044.', { principal: 'c-100' });
      expect((await agent.approve(turn.approvals[0]!.id, { by: 'alice' })).status).toBe('completed');
    }
    await agent.chat('o1', 'Please cancel my order 1045.', { principal: 'c-200' });
    const report = await erasePrincipal(store, 'c-100', { by: 'dpo' });
    expect(report.counts).toMatchObject({ sessions: 3, requests: 3 });
    await store.close();
    const bytes = Buffer.concat([
      readFileSync(path),
      existsSync(`${path}-wal`) ? readFileSync(`${path}-wal`) : Buffer.alloc(0),
    ]);
    for (const words of ['Please cancel my order 1044', 'Cancel order 1044']) {
      expect(bytes.includes(words), words).toBe(false);
    }
    // The other customer's request is still there, words and all.
    expect(bytes.includes('order 1045')).toBe(true);
  });
});
