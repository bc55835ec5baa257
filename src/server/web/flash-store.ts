import { randomBytes } from 'node:crypto';

export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

/**
 * One-shot messages after a form POST redirects ("Approved.", "Already decided by …").
 * Only an id travels in the URL, so a crafted link cannot put words on our page, and a
 * flash is shown only to the person it was written for.
 */
export interface FlashStore {
  put(owner: string, flash: Flash): string;
  take(id: string | undefined, owner: string): Flash | null;
}

export function createFlashStore(ttlMs = 120_000, now: () => number = Date.now): FlashStore {
  const flashes = new Map<string, Flash & { owner: string; expiresAt: number }>();
  return {
    put(owner, flash) {
      const at = now();
      if (flashes.size > 1000) {
        for (const [id, entry] of flashes) if (entry.expiresAt <= at) flashes.delete(id);
      }
      const id = randomBytes(12).toString('base64url');
      flashes.set(id, { ...flash, owner, expiresAt: at + ttlMs });
      return id;
    },
    take(id, owner) {
      if (!id) return null;
      const entry = flashes.get(id);
      if (!entry || entry.owner !== owner || entry.expiresAt <= now()) return null;
      flashes.delete(id);
      return { kind: entry.kind, text: entry.text };
    },
  };
}
