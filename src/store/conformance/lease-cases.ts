import { expect } from 'vitest';
import { at, atMs, type ConformanceContext } from './fixtures.ts';
import { describe, it } from './harness.ts';

export function leaseCases(ctx: ConformanceContext): void {
  describe('leases', () => {
    async function session() {
      const store = ctx.store();
      await store.ensureSession({ id: 's1', agent: 'a', principal: null, at: at(0) });
      return store;
    }

    it('a new session is not leased', async () => {
      expect(await (await session()).getLease('s1')).toEqual({ owner: null, untilMs: 0 });
    });

    it('grants a free lease and records owner and expiry', async () => {
      const store = await session();
      expect(await store.acquireLease({ session: 's1', owner: 'a', untilMs: atMs(30), nowMs: atMs(0) })).toBe(
        true,
      );
      expect(await store.getLease('s1')).toEqual({ owner: 'a', untilMs: atMs(30) });
    });

    it('refuses a held lease to another owner, and lets the holder renew it', async () => {
      const store = await session();
      await store.acquireLease({ session: 's1', owner: 'a', untilMs: atMs(30), nowMs: atMs(0) });
      expect(
        await store.acquireLease({ session: 's1', owner: 'b', untilMs: atMs(40), nowMs: atMs(10) }),
      ).toBe(false);
      expect(await store.getLease('s1')).toEqual({ owner: 'a', untilMs: atMs(30) });
      expect(
        await store.acquireLease({ session: 's1', owner: 'a', untilMs: atMs(60), nowMs: atMs(10) }),
      ).toBe(true);
      expect(await store.getLease('s1')).toEqual({ owner: 'a', untilMs: atMs(60) });
    });

    it('a lease is still held at its expiry instant and free just after it', async () => {
      const store = await session();
      await store.acquireLease({ session: 's1', owner: 'a', untilMs: atMs(30), nowMs: atMs(0) });
      expect(
        await store.acquireLease({ session: 's1', owner: 'b', untilMs: atMs(90), nowMs: atMs(30) }),
      ).toBe(false);
      expect(
        await store.acquireLease({ session: 's1', owner: 'b', untilMs: atMs(90), nowMs: atMs(31) }),
      ).toBe(true);
      expect((await store.getLease('s1'))?.owner).toBe('b');
    });

    it('takes an unexpired lease over only from the named owner', async () => {
      const store = await session();
      await store.acquireLease({ session: 's1', owner: 'a', untilMs: atMs(30), nowMs: atMs(0) });
      const wrong = { session: 's1', owner: 'b', untilMs: atMs(40), nowMs: atMs(1), takeOverFrom: 'zzz' };
      expect(await store.acquireLease(wrong)).toBe(false);
      const right = { ...wrong, takeOverFrom: 'a' };
      expect(await store.acquireLease(right)).toBe(true);
      expect(await store.getLease('s1')).toEqual({ owner: 'b', untilMs: atMs(40) });
    });

    it('two takers racing for one dead owner’s lease: exactly one gets it, and keeps it', async () => {
      const store = await session();
      for (let round = 0; round < 10; round += 1) {
        const dead = `dead-${round}`;
        await store.acquireLease({ session: 's1', owner: dead, untilMs: atMs(30), nowMs: atMs(0) });
        const take = (owner: string) =>
          store.acquireLease({ session: 's1', owner, untilMs: atMs(40), nowMs: atMs(1), takeOverFrom: dead });
        const won = await Promise.all([take(`b-${round}`), take(`c-${round}`)]);
        expect(won.filter(Boolean)).toHaveLength(1);
        expect((await store.getLease('s1'))?.owner).toBe(won[0] ? `b-${round}` : `c-${round}`);
        await store.releaseLease('s1', won[0] ? `b-${round}` : `c-${round}`);
      }
    });

    it('releases only for the owner, after which anyone may acquire', async () => {
      const store = await session();
      await store.acquireLease({ session: 's1', owner: 'a', untilMs: atMs(30), nowMs: atMs(0) });
      await store.releaseLease('s1', 'b');
      expect((await store.getLease('s1'))?.owner).toBe('a');
      await store.releaseLease('s1', 'a');
      expect((await store.getLease('s1'))?.owner).toBeNull();
      expect(await store.acquireLease({ session: 's1', owner: 'b', untilMs: atMs(40), nowMs: atMs(1) })).toBe(
        true,
      );
    });

    it('a renewal extends only a lease its owner still holds', async () => {
      const store = await session();
      const renew = { session: 's1', owner: 'a', untilMs: atMs(60) };
      expect(await store.renewLease(renew)).toBe(false);
      expect(await store.getLease('s1')).toEqual({ owner: null, untilMs: 0 });
      await store.acquireLease({ session: 's1', owner: 'a', untilMs: atMs(30), nowMs: atMs(0) });
      expect(await store.renewLease(renew)).toBe(true);
      expect(await store.getLease('s1')).toEqual({ owner: 'a', untilMs: atMs(60) });
      expect(await store.renewLease({ ...renew, owner: 'b' })).toBe(false);
      await store.releaseLease('s1', 'a');
      // A renewal that lands after the release must not take the lease back.
      expect(await store.renewLease(renew)).toBe(false);
      expect(await store.getLease('s1')).toEqual({ owner: null, untilMs: 0 });
    });

    it('a step can release the lease in its own transaction, only for its holder', async () => {
      const store = await session();
      await store.acquireLease({ session: 's1', owner: 'a', untilMs: atMs(30), nowMs: atMs(0) });
      const step = { session: 's1', expectedMessageCount: 0, append: [], at: at(5), releaseLease: true };
      await expect(store.commitStep({ ...step, leaseOwner: 'b' })).rejects.toMatchObject({
        code: 'SESSION_BUSY',
      });
      expect((await store.getLease('s1'))?.owner).toBe('a');
      const record = await store.commitStep({ ...step, leaseOwner: 'a' });
      expect(record.updatedAt).toBe(at(5));
      expect(await store.getLease('s1')).toEqual({ owner: null, untilMs: 0 });
    });

    it('cannot lease a session that does not exist', async () => {
      const store = ctx.store();
      expect(
        await store.acquireLease({ session: 'nope', owner: 'a', untilMs: atMs(30), nowMs: atMs(0) }),
      ).toBe(false);
      await expect(store.releaseLease('nope', 'a')).resolves.toBeUndefined();
      expect(await store.getLease('nope')).toBeNull();
    });

    /*
     * The step commit judges the owner, not the term (lease-rules.ts says why that is safe):
     * every acquisition by another run writes its own owner, a release writes none, and no
     * write ever puts an earlier owner back, so an owner still stored means no other run has
     * held the session since. A ledger start judges the term too: the call it lets run
     * happens after its transaction, where a takeover could meet it.
     */
    it('a step commit past its term goes through while nobody took the lease, and never once someone did', async () => {
      const store = await session();
      const step = (owner: string, seconds: number) =>
        store.commitStep({
          session: 's1',
          leaseOwner: owner,
          expectedMessageCount: 0,
          append: [],
          at: at(seconds),
        });
      await store.acquireLease({ session: 's1', owner: 'a', untilMs: atMs(30), nowMs: atMs(0) });
      // Past its term, still the stored owner: nobody ran the session since, so the commit
      // is as if it had landed inside the term (and a finished call's result is kept).
      expect((await step('a', 40)).updatedAt).toBe(at(40));
      // Another run took the lapsed lease and let it go again; the old run's step is still
      // refused, with the message count it computed against unchanged.
      expect(
        await store.acquireLease({ session: 's1', owner: 'b', untilMs: atMs(90), nowMs: atMs(41) }),
      ).toBe(true);
      await store.releaseLease('s1', 'b');
      await expect(step('a', 42)).rejects.toMatchObject({ code: 'SESSION_BUSY' });
      // Nor can it renew its way back: a renewal extends only a lease its owner still holds.
      expect(await store.renewLease({ session: 's1', owner: 'a', untilMs: atMs(120) })).toBe(false);
      // A later run of the same process is another owner (newLeaseOwner): the stale run's
      // owner matches nothing it takes.
      expect(
        await store.acquireLease({ session: 's1', owner: 'a2', untilMs: atMs(120), nowMs: atMs(43) }),
      ).toBe(true);
      await expect(step('a', 44)).rejects.toMatchObject({ code: 'SESSION_BUSY' });
      expect(await store.getSession('s1')).toMatchObject({ messageCount: 0, updatedAt: at(40) });
      expect(await store.getLease('s1')).toEqual({ owner: 'a2', untilMs: atMs(120) });
    });

    it('a run that lost its lease can no longer commit', async () => {
      const store = await session();
      await store.acquireLease({ session: 's1', owner: 'a', untilMs: atMs(30), nowMs: atMs(0) });
      await store.acquireLease({ session: 's1', owner: 'b', untilMs: atMs(90), nowMs: atMs(31) });
      await expect(
        store.commitStep({ session: 's1', leaseOwner: 'a', expectedMessageCount: 0, append: [], at: at(32) }),
      ).rejects.toMatchObject({ code: 'SESSION_BUSY' });
      const record = await store.commitStep({
        session: 's1',
        leaseOwner: 'b',
        expectedMessageCount: 0,
        append: [],
        at: at(32),
      });
      expect(record.updatedAt).toBe(at(32));
    });
  });
}
