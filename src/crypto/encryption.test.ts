import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../store/open-store.ts';
import { keyringOf } from './encrypted-store.ts';
import { envKeyProvider, parseEncryptionKeys } from './env-key-provider.ts';
import { isErased } from './erased.ts';
import { REVALIDATE_MS } from './keyring.ts';

const key = () => randomBytes(32).toString('base64');
const at = '2026-12-01T10:00:00.000Z';

async function sqlite(
  keys: string | undefined,
  path = join(mkdtempSync(join(tmpdir(), 'cs-crypt-')), 's.db'),
) {
  const env: Record<string, string | undefined> = { COUNTERSIGN_ENCRYPTION_KEYS: keys };
  return { path, store: await openStore(`sqlite:${path}`, { env }) };
}

async function seed(store: Awaited<ReturnType<typeof openStore>>, session: string, principal: string | null) {
  await store.ensureSession({ id: session, agent: 'a', principal, at });
  await store.acquireLease({ session, owner: 'me', untilMs: Date.now() + 60_000, nowMs: Date.now() });
  await store.commitStep({
    session,
    leaseOwner: 'me',
    expectedMessageCount: 0,
    at,
    append: [{ role: 'user', text: `secret words of ${session}` }],
    audit: [
      {
        kind: 'session.created',
        session,
        requestId: null,
        actor: 'test',
        data: { note: `audit of ${session}` },
      } as never,
    ],
    releaseLease: true,
  });
}

describe('encryption at rest (SQLite through openStore)', () => {
  it('reads back what it sealed, in a new process too, and names the data key in every value', async () => {
    const keys = `k1:${key()}`;
    const { store, path } = await sqlite(keys);
    await seed(store, 's1', 'cust-1');
    await store.setState('ns', 'k', { secret: 'app state words' });
    await store.close();
    const again = (await sqlite(keys, path)).store;
    expect((await again.loadMessages('s1'))[0]?.message).toEqual({
      role: 'user',
      text: 'secret words of s1',
    });
    expect(await again.getState('ns', 'k')).toEqual({ secret: 'app state words' });
    await again.close();
  });

  it('forget(principal) turns that customer’s values into the erased marker, nobody else’s', async () => {
    const { store } = await sqlite(`k1:${key()}`);
    await seed(store, 's1', 'cust-1');
    await seed(store, 's2', 'cust-2');
    const keyring = keyringOf(store);
    expect(await keyring?.forget('cust-1')).toBe(true);
    expect(await keyring?.forget('cust-1')).toBe(false);
    expect(isErased((await store.loadMessages('s1'))[0]?.message)).toBe(true);
    // Audit data whose key is gone reads as erased (erasedAt 'key-destroyed'), so the chain still verifies.
    expect(
      (await store.listAudit({ session: 's1' })).every((entry) => entry.erasedAt === 'key-destroyed'),
    ).toBe(true);
    expect((await store.loadMessages('s2'))[0]?.message).toEqual({
      role: 'user',
      text: 'secret words of s2',
    });
    await store.close();
  });

  it('a key another process forgot stops being used here once REVALIDATE_MS passed, cached texts included', async () => {
    const keys = `k1:${key()}`;
    const { store: eraser, path } = await sqlite(keys);
    await seed(eraser, 's1', 'cust-1');
    const server = (await sqlite(keys, path)).store;
    expect((await server.loadMessages('s1'))[0]?.message).toEqual({
      role: 'user',
      text: 'secret words of s1',
    });
    expect(await keyringOf(eraser)?.forget('cust-1')).toBe(true);
    const keyring = keyringOf(server);
    if (keyring === null) throw new Error('no keyring');
    const start = Date.now();
    keyring.now = () => start + REVALIDATE_MS + 1_000;
    // The read that notices the interval passed starts the check; the next one sees its end.
    await server.loadMessages('s1');
    await keyring.settled();
    expect(isErased((await server.loadMessages('s1'))[0]?.message)).toBe(true);
    // A new session of that customer gets a new key, readable by both.
    await seed(server, 's3', 'cust-1');
    expect((await eraser.loadMessages('s3'))[0]?.message).toEqual({
      role: 'user',
      text: 'secret words of s3',
    });
    await server.close();
    await eraser.close();
  });

  it('rotate re-wraps data keys under the newest key; old rows read with it; then the old key can go', async () => {
    const k1 = `k1:${key()}`;
    const { store, path } = await sqlite(k1);
    await seed(store, 's1', 'cust-1');
    await store.close();
    const k2 = `k2:${key()}`;
    const both = (await sqlite(`${k2},${k1}`, path)).store;
    const result = await keyringOf(both)?.rotate();
    expect(result).toEqual({ rewrapped: 1, total: 1, kekId: 'k2', from: ['k1'] });
    expect(await keyringOf(both)?.rotate()).toEqual({ rewrapped: 0, total: 1, kekId: 'k2', from: [] });
    await both.close();
    const onlyNew = (await sqlite(k2, path)).store;
    expect((await onlyNew.loadMessages('s1'))[0]?.message).toEqual({
      role: 'user',
      text: 'secret words of s1',
    });
    await onlyNew.close();
  });

  it('a missing or wrong key is CONFIG_ERROR naming the key id; no key at all too', async () => {
    const { store, path } = await sqlite(`k1:${key()}`);
    await seed(store, 's1', 'cust-1');
    await store.close();
    const wrong = (await sqlite(`k1:${key()}`, path)).store;
    await expect(wrong.loadMessages('s1')).rejects.toMatchObject({
      code: 'CONFIG_ERROR',
      message: expect.stringContaining('"k1"'),
    });
    await wrong.close();
    const other = (await sqlite(`k9:${key()}`, path)).store;
    await expect(other.loadMessages('s1')).rejects.toMatchObject({
      code: 'CONFIG_ERROR',
      message: expect.stringContaining('"k1"'),
    });
    await other.close();
    const none = (await sqlite(undefined, path)).store;
    await expect(none.loadMessages('s1')).rejects.toMatchObject({ code: 'CONFIG_ERROR' });
    await none.close();
  });

  it('opens a 0.1.0 store with keys set: its legacy requests are adopted first, then it runs encrypted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cs-crypt-legacy-'));
    const path = join(dir, 'countersign.db');
    copyFileSync(join(import.meta.dirname, '../../test/fixtures/stores/v0-1/countersign.db'), path);
    const { store } = await sqlite(`k1:${key()}`, path);
    expect((await store.listApprovals({ status: 'pending' })).length).toBeGreaterThan(0);
    await seed(store, 'new-1', 'cust-9');
    expect((await store.loadMessages('new-1'))[0]?.message).toEqual({
      role: 'user',
      text: 'secret words of new-1',
    });
    await store.close();
  });

  it('refuses a malformed COUNTERSIGN_ENCRYPTION_KEYS with CONFIG_ERROR', () => {
    expect(() => parseEncryptionKeys('k1:short')).toThrow(/is 3 bytes, not 32/);
    expect(() => parseEncryptionKeys(`k1:${'B'.repeat(43)}=`)).toThrow(/characters that are not base64/);
    expect(() => parseEncryptionKeys(`:${key()}`)).toThrow(/key id/);
    expect(() => parseEncryptionKeys(`a:${key()},a:${key()}`)).toThrow(/twice/);
    expect(envKeyProvider(`new:${key()},old:${key()}`).currentKeyId()).toBe('new');
  });
});
