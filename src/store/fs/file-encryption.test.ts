import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { keyringOf } from '../../crypto/encrypted-store.ts';
import { createEncryption } from '../../crypto/encryption.ts';
import { envKeyProvider } from '../../crypto/env-key-provider.ts';
import { ERASED_MARKER, ERASED_TEXT } from '../../crypto/erased.ts';
import { checkpoint } from '../conformance/checkpoint-store-conformance.ts';
import { answeredBy, portRequest } from '../conformance/fixtures.ts';
import { createFileCheckpointStore } from './file-checkpoint-store.ts';

const k1 = `k1:${randomBytes(32).toString('base64')}`;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function open(dir: string, keys = k1) {
  const e = createEncryption(envKeyProvider(keys));
  return e.wrapRuns(createFileCheckpointStore({ dir, durable: false, codec: e.codec }));
}

function bytesUnder(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8'))
    .join('\n');
}

/** A run of customer c-100 waiting on its port, answered, with app state beside it. */
async function scenario(dir: string) {
  const store = open(dir);
  const body = { note: 'Crème brûlée, damaged cover' };
  const request = portRequest('r', 'req_1', {
    effect: 'Refund 35.00 to Jane Roe',
    args: { why: 'torn page 12' },
  });
  const saved = await store.saveCheckpoint(checkpoint('r', 0, { body }), null, { requests: [request] });
  expect(saved.saved).toBe(true);
  expect(
    (await store.decide('req_1', answeredBy('mia', 20, { approved: true, note: 'photo seen' }))).won,
  ).toBe(true);
  await store.setState('cart', 'c-100', { items: ['Atlas of Clouds'] });
  return store;
}

describe('the file checkpoint store with encryption keys', () => {
  it('seals bodies, payloads, previews, answers and state; ids, statuses and times stay clear', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-fenc-'));
    dirs.push(dir);
    const store = await scenario(dir);
    const raw = bytesUnder(dir);
    for (const secret of ['Crème brûlée', 'Jane Roe', 'torn page 12', 'photo seen', 'Atlas of Clouds'])
      expect(raw).not.toContain(secret);
    for (const clear of ['"run":"r"', '"status":"running"', '"verdict":"answered"', '"customer":"c-100"'])
      expect(raw).toContain(clear);
    // Read back by a second process with the same keys.
    const other = open(dir);
    expect((await other.latestCheckpoint('r'))?.body).toEqual({ note: 'Crème brûlée, damaged cover' });
    expect(await other.getApproval('req_1')).toMatchObject({
      args: { why: 'torn page 12' },
      effect: 'Refund 35.00 to Jane Roe',
      status: 'answered',
      decision: { response: { approved: true, note: 'photo seen' }, by: 'mia' },
    });
    expect(await other.getState('cart', 'c-100')).toEqual({ items: ['Atlas of Clouds'] });
    await store.close();
  });

  it('forgetting the customer’s key: their request reads as erased, the run’s own data does not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-fenc-'));
    dirs.push(dir);
    const store = await scenario(dir);
    expect(await keyringOf(store)?.forget('c-100')).toBe(true);
    for (const reader of [store, open(dir)]) {
      expect(await reader.getApproval('req_1')).toMatchObject({
        args: ERASED_MARKER,
        effect: ERASED_TEXT,
        status: 'answered',
        decision: { verdict: 'answered', by: 'mia', reason: null },
      });
      expect((await reader.getApproval('req_1'))?.decision).not.toHaveProperty('response');
      // The checkpoint is the run's (sealed under run:r), removed by erasure with the run.
      expect((await reader.latestCheckpoint('r'))?.body).toEqual({ note: 'Crème brûlée, damaged cover' });
    }
    // No file under keys/ holds the customer's wrapped key any more.
    const records = readdirSync(join(dir, 'keys'))
      .filter((name) => name.endsWith('.json'))
      .map(
        (name) =>
          JSON.parse(readFileSync(join(dir, 'keys', name), 'utf8')) as { owner: string; wrapped: unknown },
      );
    const theirs = records.filter((record) => record.owner === 'principal:c-100');
    expect(theirs).toHaveLength(1);
    expect(theirs[0]?.wrapped).toBeNull();
    expect(records.some((record) => record.owner === 'run:r' && typeof record.wrapped === 'string')).toBe(
      true,
    );
  });

  it('a wrong key is CONFIG_ERROR naming the key id; no keys at all is CONFIG_ERROR too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-fenc-'));
    dirs.push(dir);
    await scenario(dir);
    await expect(
      open(dir, `k1:${randomBytes(32).toString('base64')}`).latestCheckpoint('r'),
    ).rejects.toMatchObject({
      code: 'CONFIG_ERROR',
      message: expect.stringContaining('"k1"'),
    });
    await expect(
      createFileCheckpointStore({ dir, durable: false }).getApproval('req_1'),
    ).rejects.toMatchObject({
      code: 'CONFIG_ERROR',
    });
  });
});

describe('keys set on a file store written without them', () => {
  it('reads the plain files as they are and seals what is written from then on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-fenc-'));
    dirs.push(dir);
    const plain = createFileCheckpointStore({ dir, durable: false });
    const request = portRequest('r', 'req_1', { args: { why: 'torn page 12' } });
    await plain.saveCheckpoint(checkpoint('r', 0), null, { requests: [request] });
    const store = open(dir);
    expect(await store.getApproval('req_1')).toMatchObject({
      args: { why: 'torn page 12' },
      status: 'pending',
    });
    expect((await store.decide('req_1', answeredBy('mia', 20, { note: 'photo seen' }))).won).toBe(true);
    expect(
      (await store.saveCheckpoint(checkpoint('r', 1, { body: { n: 'sealed now' } }), 'cp-r-0')).saved,
    ).toBe(true);
    expect(await open(dir).getApproval('req_1')).toMatchObject({
      decision: { response: { note: 'photo seen' } },
    });
    expect((await open(dir).latestCheckpoint('r'))?.body).toEqual({ n: 'sealed now' });
    const raw = bytesUnder(dir);
    expect(raw).toContain('torn page 12'); // written before the keys: not rewritten
    expect(raw).not.toContain('photo seen');
    expect(raw).not.toContain('sealed now');
  });
});

describe('file data keys across processes', () => {
  it('several processes creating one customer’s key at once all use the one that won', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-fkeys-'));
    dirs.push(dir);
    const stores = Array.from({ length: 6 }, () => createFileCheckpointStore({ dir, durable: false }));
    const record = (id: string) => ({
      id,
      owner: 'principal:c-1',
      kekId: 'k1',
      wrapped: `w-${id}`,
      createdAt: '2030-01-01T00:00:00.000Z',
      forgottenAt: null,
    });
    const won = await Promise.all(stores.map((store, i) => store.insertDataKey(record(`dk_${i}`))));
    expect(new Set(won.map((key) => key.id)).size).toBe(1);
    expect(await stores[0]?.listLiveDataKeys({ limit: 10 })).toEqual([won[0]]);
    // A forget racing a rewrap: the key ends forgotten either way.
    const [forgotten] = await Promise.all([
      stores[1]?.forgetDataKeys('principal:c-1', '2030-01-02T00:00:00.000Z'),
      stores[2]?.rewrapDataKey(won[0]?.id as string, 'k1', 'k2', 'again'),
    ]);
    expect(forgotten).toEqual([won[0]?.id]);
    expect(await stores[3]?.getDataKey(won[0]?.id as string)).toMatchObject({ wrapped: null, kekId: null });
    expect(await stores[3]?.liveDataKey('principal:c-1')).toBeNull();
  });
});
