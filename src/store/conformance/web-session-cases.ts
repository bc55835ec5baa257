import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import type { WebSessionRecord } from '../store.ts';
import { at, atMs, type ConformanceContext } from './fixtures.ts';
import { describe, it } from './harness.ts';

const hashOf = (cookie: string) => createHash('sha256').update(cookie).digest('hex');

function signIn(cookie: string, approver: string, expiresSeconds: number): WebSessionRecord {
  return { idHash: hashOf(cookie), approver, createdAt: at(0), expiresAtMs: atMs(expiresSeconds) };
}

export function webSessionCases(ctx: ConformanceContext): void {
  describe('inbox sign-ins (web sessions)', () => {
    it('round-trips a sign-in by its hash; an unknown hash is null', async () => {
      const store = ctx.store();
      const alice = signIn('cookie-alice', 'alice', 100);
      await store.createWebSession(alice, atMs(0));
      await store.createWebSession(signIn('cookie-bob', 'bob', 200), atMs(0));
      expect(await store.getWebSession(alice.idHash, atMs(1))).toEqual(alice);
      expect(await store.getWebSession(hashOf('cookie-bob'), atMs(1))).toMatchObject({ approver: 'bob' });
      expect(await store.getWebSession(hashOf('cookie-carol'), atMs(1))).toBeNull();
    });

    it('slides the expiry forward on touch, never backwards; get alone does not slide it', async () => {
      const store = ctx.store();
      const alice = signIn('cookie-alice', 'alice', 100);
      await store.createWebSession(alice, atMs(0));
      expect(await store.touchWebSession(alice.idHash, { nowMs: atMs(50), expiresAtMs: atMs(150) })).toEqual({
        ...alice,
        expiresAtMs: atMs(150),
      });
      expect(await store.getWebSession(alice.idHash, atMs(120))).toMatchObject({ expiresAtMs: atMs(150) });
      // A touch computed earlier (a slower request of the same browser) does not shorten it.
      expect(
        await store.touchWebSession(alice.idHash, { nowMs: atMs(60), expiresAtMs: atMs(130) }),
      ).toMatchObject({ expiresAtMs: atMs(150) });
      expect(await store.getWebSession(alice.idHash, atMs(149))).not.toBeNull();
      expect(
        await store.touchWebSession(hashOf('nobody'), { nowMs: atMs(60), expiresAtMs: atMs(200) }),
      ).toBeNull();
    });

    it('an expired sign-in is null to get and touch, and a touch does not revive it', async () => {
      const store = ctx.store();
      const alice = signIn('cookie-alice', 'alice', 100);
      await store.createWebSession(alice, atMs(0));
      expect(await store.getWebSession(alice.idHash, atMs(99))).not.toBeNull();
      // Over at its expiry exactly.
      expect(await store.getWebSession(alice.idHash, atMs(100))).toBeNull();
      expect(
        await store.touchWebSession(alice.idHash, { nowMs: atMs(100), expiresAtMs: atMs(300) }),
      ).toBeNull();
      expect(await store.getWebSession(alice.idHash, atMs(50))).toMatchObject({ expiresAtMs: atMs(100) });
    });

    it('a new sign-in prunes the expired ones and keeps the live ones', async () => {
      const store = ctx.store();
      const old = signIn('cookie-old', 'alice', 100);
      const live = signIn('cookie-live', 'bob', 500);
      await store.createWebSession(old, atMs(0));
      await store.createWebSession(live, atMs(0));
      await store.createWebSession(signIn('cookie-new', 'carol', 900), atMs(200));
      // Asked about a time before it expired, the pruned row is gone: it was deleted, not hidden.
      expect(await store.getWebSession(old.idHash, atMs(1))).toBeNull();
      expect(await store.getWebSession(live.idHash, atMs(1))).toEqual(live);
      expect(await store.getWebSession(hashOf('cookie-new'), atMs(201))).toMatchObject({ approver: 'carol' });
    });

    it('delete signs out once; other sign-ins stay', async () => {
      const store = ctx.store();
      const alice = signIn('cookie-alice', 'alice', 100);
      const bob = signIn('cookie-bob', 'bob', 100);
      await store.createWebSession(alice, atMs(0));
      await store.createWebSession(bob, atMs(0));
      expect(await store.deleteWebSession(alice.idHash)).toBe(true);
      expect(await store.deleteWebSession(alice.idHash)).toBe(false);
      expect(await store.getWebSession(alice.idHash, atMs(1))).toBeNull();
      expect(await store.touchWebSession(alice.idHash, { nowMs: atMs(1), expiresAtMs: atMs(90) })).toBeNull();
      expect(await store.getWebSession(bob.idHash, atMs(1))).toEqual(bob);
    });

    it('another store on the same database sees the sign-in, its slide and its deletion', async () => {
      const store = ctx.store();
      const other = await ctx.sibling();
      const alice = signIn('cookie-alice', 'alice', 100);
      await store.createWebSession(alice, atMs(0));
      expect(await other.getWebSession(alice.idHash, atMs(1))).toEqual(alice);
      await other.touchWebSession(alice.idHash, { nowMs: atMs(10), expiresAtMs: atMs(400) });
      expect(await store.getWebSession(alice.idHash, atMs(300))).toMatchObject({ expiresAtMs: atMs(400) });
      expect(await other.deleteWebSession(alice.idHash)).toBe(true);
      expect(await store.getWebSession(alice.idHash, atMs(1))).toBeNull();
    });
  });
}
