import { expect } from 'vitest';
import type { DeliveryEnqueue, Store } from '../store.ts';
import { at, atMs, type ConformanceContext } from './fixtures.ts';
import { describe, it } from './harness.ts';

function delivery(
  id: string,
  createdSeconds: number,
  overrides: Partial<DeliveryEnqueue> = {},
): DeliveryEnqueue {
  return {
    id,
    kind: 'approval.requested',
    payload: { id, type: 'approval.requested', data: { approval: { id: `apr-${id}`, args: [1, 'two'] } } },
    createdAt: at(createdSeconds),
    nextAtMs: atMs(createdSeconds),
    ...overrides,
  };
}

const claim = (store: Store, owner: string, nowSeconds: number, limit = 10, leaseSeconds = 30) =>
  store.claimDeliveries({ nowMs: atMs(nowSeconds), limit, leaseMs: leaseSeconds * 1000, owner });

export function deliveryCases(ctx: ConformanceContext): void {
  describe('delivery outbox', () => {
    it('enqueues once per id: a second enqueue under the same id changes nothing', async () => {
      const store = ctx.store();
      expect(await store.getDelivery('evt_1')).toBeNull();
      expect(await store.enqueueDelivery(delivery('evt_1', 5))).toBe(true);
      expect(
        await store.enqueueDelivery(delivery('evt_1', 9, { kind: 'other', payload: { replaced: true } })),
      ).toBe(false);
      expect(await store.getDelivery('evt_1')).toEqual({
        id: 'evt_1',
        kind: 'approval.requested',
        payload: delivery('evt_1', 5).payload,
        createdAt: at(5),
        status: 'pending',
        attempts: 0,
        nextAtMs: atMs(5),
        claimedBy: null,
        lastError: null,
        finishedAt: null,
      });
      // Even a delivered row keeps its id: the event is not delivered a second time.
      await claim(store, 'a', 5);
      expect(await store.finishDelivery('evt_1', 'a', { status: 'delivered', at: at(6) })).toBe(true);
      expect(await store.enqueueDelivery(delivery('evt_1', 7))).toBe(false);
      expect(await claim(store, 'a', 100)).toEqual([]);
    });

    it('claims only due rows, oldest first, at most `limit`', async () => {
      const store = ctx.store();
      await store.enqueueDelivery(delivery('evt_c', 3));
      await store.enqueueDelivery(delivery('evt_a', 1));
      await store.enqueueDelivery(delivery('evt_b', 2));
      await store.enqueueDelivery(delivery('evt_later', 0, { nextAtMs: atMs(50) }));
      const first = await claim(store, 'a', 10, 2, 100);
      expect(first.map((row) => row.id)).toEqual(['evt_a', 'evt_b']);
      expect(first[0]).toMatchObject({ claimedBy: 'a', attempts: 1, nextAtMs: atMs(110), status: 'pending' });
      expect(first[0]?.payload).toEqual(delivery('evt_a', 1).payload);
      expect((await claim(store, 'b', 10, 5, 100)).map((row) => row.id)).toEqual(['evt_c']);
      expect(await claim(store, 'b', 10, 5)).toEqual([]);
      // Due at its next_at exactly.
      expect((await claim(store, 'b', 50, 5)).map((row) => row.id)).toEqual(['evt_later']);
      expect(await claim(store, 'b', 20, 0)).toEqual([]);
    });

    it('a claimed row is not claimed again until its claim lapses; then the old owner cannot finish it', async () => {
      const store = ctx.store();
      await store.enqueueDelivery(delivery('evt_1', 0));
      expect(await claim(store, 'a', 0, 10, 30)).toHaveLength(1);
      expect(await claim(store, 'b', 10)).toEqual([]);
      expect(await claim(store, 'b', 29)).toEqual([]);
      expect(await store.getDelivery('evt_1')).toMatchObject({ claimedBy: 'a', nextAtMs: atMs(30) });
      const again = await claim(store, 'b', 30);
      expect(again).toMatchObject([{ id: 'evt_1', claimedBy: 'b', attempts: 2, nextAtMs: atMs(60) }]);
      expect(await store.finishDelivery('evt_1', 'a', { status: 'delivered', at: at(31) })).toBe(false);
      expect(await store.getDelivery('evt_1')).toMatchObject({ status: 'pending', claimedBy: 'b' });
      expect(await store.finishDelivery('evt_1', 'b', { status: 'delivered', at: at(32) })).toBe(true);
      expect(await store.getDelivery('evt_1')).toMatchObject({
        status: 'delivered',
        claimedBy: null,
        attempts: 2,
        finishedAt: at(32),
      });
    });

    it('delivered and failed rows are final: never claimed or finished again', async () => {
      const store = ctx.store();
      await store.enqueueDelivery(delivery('evt_ok', 0));
      await store.enqueueDelivery(delivery('evt_bad', 1));
      await claim(store, 'a', 5);
      expect(await store.finishDelivery('evt_ok', 'a', { status: 'delivered', at: at(6) })).toBe(true);
      expect(
        await store.finishDelivery('evt_bad', 'a', { status: 'failed', at: at(6), error: 'HTTP 410' }),
      ).toBe(true);
      expect(await store.getDelivery('evt_bad')).toMatchObject({
        status: 'failed',
        lastError: 'HTTP 410',
        finishedAt: at(6),
        claimedBy: null,
      });
      expect(await claim(store, 'a', 10_000)).toEqual([]);
      expect(
        await store.finishDelivery('evt_ok', 'a', { status: 'retry', nextAtMs: atMs(7), error: 'late' }),
      ).toBe(false);
      expect(await store.getDelivery('evt_ok')).toMatchObject({ status: 'delivered', lastError: null });
      expect(await store.finishDelivery('evt_none', 'a', { status: 'delivered', at: at(6) })).toBe(false);
    });

    it('a retry sets the next time and keeps the attempt count; the next claim adds one', async () => {
      const store = ctx.store();
      await store.enqueueDelivery(delivery('evt_1', 0));
      await claim(store, 'a', 0);
      expect(
        await store.finishDelivery('evt_1', 'a', { status: 'retry', nextAtMs: atMs(5), error: 'HTTP 503' }),
      ).toBe(true);
      expect(await store.getDelivery('evt_1')).toMatchObject({
        status: 'pending',
        attempts: 1,
        nextAtMs: atMs(5),
        claimedBy: null,
        lastError: 'HTTP 503',
      });
      // The retry released the claim: finishing it again is refused.
      expect(await store.finishDelivery('evt_1', 'a', { status: 'delivered', at: at(1) })).toBe(false);
      expect(await claim(store, 'b', 4)).toEqual([]);
      expect(await claim(store, 'b', 5)).toMatchObject([{ id: 'evt_1', attempts: 2, claimedBy: 'b' }]);
      expect(
        await store.finishDelivery('evt_1', 'b', { status: 'retry', nextAtMs: atMs(20), error: 'timeout' }),
      ).toBe(true);
      expect(await claim(store, 'c', 20)).toMatchObject([{ id: 'evt_1', attempts: 3, lastError: 'timeout' }]);
    });

    it('claims racing from two connections never hand out the same row', async () => {
      const store = ctx.store();
      const other = await ctx.sibling();
      const ids = Array.from({ length: 40 }, (_, i) => `evt_${String(i).padStart(2, '0')}`);
      for (const [i, id] of ids.entries()) await store.enqueueDelivery(delivery(id, i));
      const rounds = await Promise.all(
        Array.from({ length: 12 }, (_, i) => claim(i % 2 === 0 ? store : other, `owner-${i}`, 1000, 4)),
      );
      const claimed = rounds.flat().map((row) => row.id);
      expect(new Set(claimed).size).toBe(claimed.length);
      // Whatever is left is still there for the next claim, once each.
      const rest = (await claim(other, 'last', 1000, 100)).map((row) => row.id);
      expect([...claimed, ...rest].sort()).toEqual(ids);
      for (const round of rounds) {
        const owners = new Set(round.map((row) => row.claimedBy));
        expect(owners.size).toBeLessThanOrEqual(1);
      }
    });
  });
}
