import { expect } from 'vitest';
import type { ConformanceContext } from './fixtures.ts';
import { describe, it } from './harness.ts';

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

    it('stores null as a value, distinct from missing', async () => {
      const store = ctx.store();
      await store.setState('ns', 'k', null);
      expect(await store.getState('ns', 'k')).toBeNull();
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
