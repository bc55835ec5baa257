import { expect } from 'vitest';
import type { DataKeyRecord, DataKeys } from '../ports/data-keys.ts';
import { at, type PortContext } from './fixtures.ts';
import { describe, it } from './harness.ts';

function key(id: string, owner: string, kekId = 'k1', createdSeconds = 1): DataKeyRecord {
  return {
    id,
    owner,
    kekId,
    wrapped: `wrapped-${id}-${kekId}`,
    createdAt: at(createdSeconds),
    forgottenAt: null,
  };
}

export function dataKeyCases(ctx: PortContext<DataKeys>): void {
  describe('data keys', () => {
    it('stores a wrapped key, and an owner has one live key: a second insert gets the first back', async () => {
      const store = ctx.store();
      expect(await store.getDataKey('dk_a')).toBeNull();
      expect(await store.liveDataKey('principal:c-1')).toBeNull();
      expect(await store.insertDataKey(key('dk_a', 'principal:c-1'))).toEqual(key('dk_a', 'principal:c-1'));
      // Another process creating the same owner's key at once loses and uses the winner's.
      const sibling = await ctx.sibling();
      expect(await sibling.insertDataKey(key('dk_b', 'principal:c-1', 'k1', 2))).toEqual(
        key('dk_a', 'principal:c-1'),
      );
      expect(await store.getDataKey('dk_b')).toBeNull();
      expect(await store.liveDataKey('principal:c-1')).toEqual(key('dk_a', 'principal:c-1'));
      expect(await store.insertDataKey(key('dk_c', 'session:s-1'))).toEqual(key('dk_c', 'session:s-1'));
    });

    it('forgets an owner’s key: the row stays without the key, and the owner can get a new one', async () => {
      const store = ctx.store();
      await store.insertDataKey(key('dk_a', 'principal:c-1'));
      await store.insertDataKey(key('dk_z', 'principal:c-2'));
      expect(await store.forgetDataKeys('principal:c-1', at(5))).toEqual(['dk_a']);
      expect(await store.forgetDataKeys('principal:c-1', at(6))).toEqual([]);
      expect(await store.getDataKey('dk_a')).toEqual({
        ...key('dk_a', 'principal:c-1'),
        kekId: null,
        wrapped: null,
        forgottenAt: at(5),
      });
      expect(await store.liveDataKey('principal:c-1')).toBeNull();
      expect(await store.liveDataKey('principal:c-2')).toEqual(key('dk_z', 'principal:c-2'));
      expect(await store.insertDataKey(key('dk_b', 'principal:c-1', 'k1', 7))).toEqual(
        key('dk_b', 'principal:c-1', 'k1', 7),
      );
      expect(await store.rewrapDataKey('dk_a', 'k1', 'k2', 'again')).toBe(false);
    });

    it('re-wraps as a compare-and-set on the KEK, and pages live keys in id order', async () => {
      const store = ctx.store();
      for (const id of ['dk_c', 'dk_a', 'dk_b']) await store.insertDataKey(key(id, `session:${id}`));
      await store.insertDataKey(key('dk_d', 'principal:gone'));
      await store.forgetDataKeys('principal:gone', at(3));
      expect(await store.rewrapDataKey('dk_a', 'k0', 'k2', 'x')).toBe(false);
      expect(await store.rewrapDataKey('dk_a', 'k1', 'k2', 'under-k2')).toBe(true);
      expect(await store.rewrapDataKey('dk_a', 'k1', 'k2', 'twice')).toBe(false);
      expect(await store.getDataKey('dk_a')).toMatchObject({ kekId: 'k2', wrapped: 'under-k2' });
      const first = await store.listLiveDataKeys({ limit: 2 });
      expect(first.map((k) => k.id)).toEqual(['dk_a', 'dk_b']);
      const rest = await store.listLiveDataKeys({ afterId: 'dk_b', limit: 2 });
      expect(rest.map((k) => k.id)).toEqual(['dk_c']);
    });
  });
}
