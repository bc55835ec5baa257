import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { at, leasedSession, raise, request } from '../store/conformance/fixtures.ts';
import { createSqliteStore } from '../store/sqlite/sqlite-store.ts';
import { createEncryption } from './encryption.ts';
import { envKeyProvider } from './env-key-provider.ts';

/*
 * What the encrypted conformance run skips ("effect previews are encrypted at rest"), pinned
 * as behaviour: with keys set, a text search still finds a request by its customer, and finds
 * nothing by words of its sealed effect, instead of erroring or matching ciphertext.
 */
describe('text search over an encrypted store', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('matches the customer; the sealed effect preview is not searched', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-sealed-search-'));
    dirs.push(dir);
    const encryption = createEncryption(envKeyProvider(`k1:${randomBytes(32).toString('base64')}`));
    const store = encryption.wrap(
      createSqliteStore({ path: join(dir, 'store.db'), codec: encryption.codec }),
    );
    await leasedSession(store, 's1');
    await raise(store, 's1', [
      request({
        id: 'b',
        session: 's1',
        createdAt: at(2),
        customer: 'Carol Jones',
        effect: 'Refunds 12.00 on order 1040.',
      }),
    ]);
    const ids = async (text: string) =>
      (await store.pageRequests({ limit: 5, text })).items.map((row) => row.id);
    expect(await ids('JONES')).toEqual(['b']);
    expect(await ids('refunds 12')).toEqual([]);
    // The preview itself reads back whole through the codec.
    expect((await store.getApproval('b'))?.effect).toBe('Refunds 12.00 on order 1040.');
  });
});
