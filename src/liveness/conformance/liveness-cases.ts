import { describe, expect, it } from 'vitest';
import { deadOwners } from '../dead-owners.ts';
import { formatOwner } from '../lease-owner.ts';
import type { Liveness, LivenessChange } from '../liveness.ts';
import type { ProcessSpace } from '../process-space.ts';

export interface LivenessSubject {
  /** A new instance, standing for one process. */
  open(): Promise<Liveness>;
  /**
   * Whether a process that let go (close) is judged dead from another host: true for a
   * backend shared across hosts (postgres); false for the local one, where the term decides.
   */
  crossHost: boolean;
  /**
   * Takes `process`'s lock away as an outage would, while it lives (postgres: its lock
   * connection terminated); absent for a backend with nothing to lose (local).
   */
  cut?(process: Liveness): Promise<void>;
}

async function until(probe: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** An observer in another space: nothing it judges can be settled by a PID. */
const observer: ProcessSpace = { hostname: 'observer', space: 'observer/2.00000000000000aa', pid: 2 };

/** An owner minted by `process` as if it ran elsewhere (the space is not the observer's). */
async function ownerOf(process: Liveness): Promise<string> {
  return formatOwner('holder/1.00000000000000bb', 1, 'n0nce', await process.token());
}

/**
 * What every Liveness backend does, judged through the one rule (dead-owners.ts) from
 * another space, so only the backend can decide. Each case closes what it opens.
 */
export function livenessCases(name: string, subject: LivenessSubject): void {
  describe(`Liveness conformance: ${name}`, () => {
    it('a live process is never judged dead, and its token is the same every time it is asked', async () => {
      const holder = await subject.open();
      const other = await subject.open();
      try {
        const owner = await ownerOf(holder);
        expect(await holder.token()).toBe(await holder.token());
        expect(await deadOwners([owner], other, { here: observer })).toEqual(new Set());
        expect(await deadOwners([owner], holder, { here: observer })).toEqual(new Set());
      } finally {
        await holder.close();
        await other.close();
      }
    });

    it('two processes hold different tokens (or none)', async () => {
      const a = await subject.open();
      const b = await subject.open();
      try {
        const [ta, tb] = [await a.token(), await b.token()];
        if (ta !== null || tb !== null) expect(ta).not.toBe(tb);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('two processes agree on the time leases run on, and it never goes backwards', async () => {
      const a = await subject.open();
      const b = await subject.open();
      try {
        const [ta, tb] = [await a.now(), await b.now()];
        // Same host in these tests: the store's clock is this host's, to a round trip.
        expect(Math.abs(ta - tb)).toBeLessThan(1000);
        expect(Math.abs(ta - Date.now())).toBeLessThan(1000);
        expect(await a.now()).toBeGreaterThanOrEqual(ta);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('a token it cannot read is never released: no holder is judged dead on a guess', async () => {
      const other = await subject.open();
      try {
        const tokens = ['x', 'pg', 'pgzz', 'pg0', `pg${'f'.repeat(17)}`, 'pg4000000000000000', 'lk1f'];
        expect(await other.released(tokens)).toEqual(new Set());
        expect(await other.released([])).toEqual(new Set());
      } finally {
        await other.close();
      }
    });

    it('a listener hears nothing while the token stays held, nor when the process lets go', async () => {
      const holder = await subject.open();
      const changes: LivenessChange[] = [];
      const token = await holder.token();
      holder.onChange((change) => changes.push(change));
      expect(await holder.token()).toBe(token);
      await holder.now();
      await holder.close();
      expect(changes).toEqual([]);
    });

    // Only a backend with a lock to lose: the local one has none.
    const cut = subject.cut;
    if (cut !== undefined)
      it('its lock lost while it lives: listeners hear the loss with a reason, then the hold again, with its one token; it is not judged dead meanwhile', async () => {
        const holder = await subject.open();
        const other = await subject.open();
        try {
          const token = await holder.token();
          expect(token).not.toBeNull();
          const owner = await ownerOf(holder);
          const heard: LivenessChange[] = [];
          const unsubscribed: LivenessChange[] = [];
          // A listener that throws stops neither the others nor the lock.
          holder.onChange(() => {
            throw new Error('a broken listener');
          });
          holder.onChange((change) => heard.push(change));
          holder.onChange((change) => unsubscribed.push(change))();
          await cut(holder);
          expect(await deadOwners([owner], other, { here: observer })).toEqual(new Set());
          await until(() => heard.some((change) => change.held));
          // The loss, any failed attempts to hold it again (each with its reason), the hold.
          const [loss, ...rest] = heard;
          const again = rest.pop();
          expect(loss).toEqual({ held: false, token, reason: expect.stringMatching(/./) });
          for (const attempt of rest)
            expect(attempt).toEqual({ held: false, token, reason: expect.stringMatching(/./), retry: true });
          expect(again).toEqual({ held: true, token });
          expect(unsubscribed).toEqual([]);
          expect(await holder.token()).toBe(token);
        } finally {
          await holder.close();
          await other.close();
        }
      });

    it(
      subject.crossHost
        ? 'a process that let go is judged dead from another host'
        : 'a process that let go is not judged dead from another host: its lease lapses after its term',
      async () => {
        const holder = await subject.open();
        const owner = await ownerOf(holder);
        await holder.close();
        const other = await subject.open();
        try {
          const dead = await deadOwners([owner], other, { here: observer, confirmMs: 10 });
          expect(dead).toEqual(subject.crossHost ? new Set([owner]) : new Set());
        } finally {
          await other.close();
        }
      },
    );
  });
}
