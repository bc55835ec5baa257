import { expect } from 'vitest';
import type { ConformanceContext } from './fixtures.ts';
import { describe, it } from './harness.ts';
import { expectPlainJsonState } from './state-values.ts';

export function stateCases(ctx: ConformanceContext): void {
  describe('application state', () => {
    it('is undefined for a missing key', async () => {
      expect(await ctx.store().getState('bookstore', 'orders')).toBeUndefined();
    });

    it('stores, overwrites and keeps namespaces apart', async () => {
      const store = ctx.store();
      await store.setState('bookstore', 'orders', [{ id: 'o-1', total: 12.5 }]);
      await store.setState('other', 'orders', 'not the bookstore');
      expect(await store.getState('bookstore', 'orders')).toEqual([{ id: 'o-1', total: 12.5 }]);
      await store.setState('bookstore', 'orders', { replaced: true });
      expect(await store.getState('bookstore', 'orders')).toEqual({ replaced: true });
      expect(await store.getState('other', 'orders')).toBe('not the bookstore');
    });

    it('reads started together each get their own key, however namespace and key divide the text', async () => {
      const store = ctx.store();
      await store.setState('a:b', 'c', 'first');
      await store.setState('a', ':bc', 'second');
      await store.setState('a', 'b:c', 'third');
      await store.setState('ab', 'c', null);
      expect(
        await Promise.all([
          store.getState('a:b', 'c'),
          store.getState('a', ':bc'),
          store.getState('a', 'b:c'),
          store.getState('ab', 'c'),
          store.getState('a', 'missing'),
          store.getState('a:b', 'c'),
        ]),
      ).toEqual(['first', 'second', 'third', null, undefined, 'first']);
    });

    it('reads started together keep keys that look like array syntax, JSON or null apart', async () => {
      const store = ctx.store();
      // PostgreSQL reads a turn's keys as one JSON parameter: escaping must keep each key whole.
      // A lone surrogate is stored as UTF-8 has it (U+FFFD) and found again under either.
      const keys = ['NULL', 'a"b', 'c\\d', '{e,f}', 'g,h', ' ', '', '"}]', '\\u0041', 'é€😀', 'x\ud800'];
      for (const [i, key] of keys.entries()) await store.setState('odd', key, i);
      expect(await Promise.all(keys.map((key) => store.getState('odd', key)))).toEqual(keys.map((_, i) => i));
      expect(await store.getState('odd', 'null')).toBeUndefined();
      expect(await store.getState('odd', 'A')).toBeUndefined();
      expect(await store.getState('odd', 'x\ufffd')).toBe(keys.length - 1);
    });

    it('a namespace ending in a lone high surrogate and a key starting with a lone low one are found again', async () => {
      // Each part is stored with U+FFFD; joined, the two halves would make a whole pair.
      const store = ctx.store();
      await store.setState('a\ud83d', '\ude00b', 1);
      await store.setState('c\ud800', 'd', 2);
      expect(await store.getState('a\ud83d', '\ude00b')).toBe(1);
      expect(await store.getState('a\ufffd', '\ufffdb')).toBe(1);
      expect(await store.getState('a😀', 'b')).toBeUndefined();
      expect(
        await Promise.all([
          store.getState('a\ud83d', '\ude00b'),
          store.getState('c\ud800', 'd'),
          store.getState('c\ufffd', 'd'),
          store.getState('missing', 'x'),
        ]),
      ).toEqual([1, 2, 2, undefined]);
    });

    it('75 keys read in one turn (more than one statement holds), with duplicates and unknown keys', async () => {
      const store = ctx.store();
      for (let i = 0; i < 50; i++) await store.setState('many', `k${i}`, i);
      const keys = [...Array.from({ length: 70 }, (_, i) => `k${i}`), 'k3', 'k3', 'k49', 'nope', ''];
      expect(await Promise.all(keys.map((key) => store.getState('many', key)))).toEqual(
        keys.map((key) => {
          const i = Number(key.slice(1));
          return key.startsWith('k') && i < 50 ? i : undefined;
        }),
      );
    });

    it('a read after a write by the same caller sees it, with other callers reading alongside', async () => {
      const store = ctx.store();
      await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          await store.setState('ryw', `k${i}`, i);
          expect(await store.getState('ryw', `k${i}`)).toBe(i);
          await store.setState('ryw', `k${i}`, i + 100);
          expect(await store.getState('ryw', `k${i}`)).toBe(i + 100);
        }),
      );
    });

    it('stores null as a value, distinct from missing', async () => {
      const store = ctx.store();
      await store.setState('ns', 'k', null);
      expect(await store.getState('ns', 'k')).toBeNull();
    });

    it('claims a key once: the first claim wins, a later one gets what is there and writes nothing', async () => {
      const store = ctx.store();
      expect(await store.claimState('bookstore', 'refund:1040', { amount: 35 })).toEqual({
        won: true,
        value: { amount: 35 },
      });
      expect(await store.claimState('bookstore', 'refund:1040', { amount: 99 })).toEqual({
        won: false,
        value: { amount: 35 },
      });
      expect(await store.getState('bookstore', 'refund:1040')).toEqual({ amount: 35 });
      // A claim is on the same key/value as setState: a key already set is not claimed.
      await store.setState('bookstore', 'order:1040', 'Delivered');
      expect(await store.claimState('bookstore', 'order:1040', 'Cancelled')).toEqual({
        won: false,
        value: 'Delivered',
      });
    });

    it('keeps values as plain JSON, alike on every backend, and refuses what has none, writing nothing', async () => {
      await expectPlainJsonState(ctx.store());
    });

    it('hands out copies', async () => {
      const store = ctx.store();
      const value = { list: [1, 2] };
      await store.setState('ns', 'k', value);
      value.list.push(3);
      const read = await store.getState('ns', 'k');
      if (read !== null && typeof read === 'object' && !Array.isArray(read)) read.list = [];
      expect(await store.getState('ns', 'k')).toEqual({ list: [1, 2] });
    });
  });
}
