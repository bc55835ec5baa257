import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let offset = 0;

/**
 * Cryptographically random bytes for ids and lease owners, drawn from a pool filled 4 KiB at
 * a time: `randomBytes(20)` per id costs a native call each, and a decision mints several.
 * Every pool is filled once and handed out in slices that never overlap, so no two callers
 * ever see the same bytes.
 */
export function secureRandomBytes(size: number): Buffer {
  if (size > POOL_BYTES) return randomFillSync(Buffer.alloc(size));
  if (offset + size > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES));
    offset = 0;
  }
  const out = pool.subarray(offset, offset + size);
  offset += size;
  return out;
}
