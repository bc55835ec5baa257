import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  type KeyObject,
  randomFillSync,
} from 'node:crypto';
import type { CipherKey } from './cipher-key.ts';

// AES-256-GCM with a random 96-bit nonce per value. Layout: nonce(12) ‖ tag(16) ‖ ciphertext.
// Random nonces are safe far beyond any one data key's use here (2^32 values per key).
const NONCE = 12;
const TAG = 16;

// Nonces come from a pool filled 1,024 at a time: one getrandom call instead of one per value.
const POOL = NONCE * 1024;
let pool = Buffer.alloc(0);
let used = POOL;

function nonce(): Buffer {
  if (used + NONCE > pool.length) {
    pool = randomFillSync(Buffer.alloc(POOL));
    used = 0;
  }
  const next = pool.subarray(used, used + NONCE);
  used += NONCE;
  return next;
}

/** Imported once per data key: a KeyObject makes each cipher about twice as cheap to set up as raw bytes. */
export function cipherKey(bytes: Uint8Array): CipherKey {
  return createSecretKey(bytes);
}

const keyOf = (key: CipherKey | Uint8Array): KeyObject | Uint8Array =>
  key instanceof Uint8Array ? key : (key as KeyObject);

/** `plaintext` as a string is taken as UTF-8 (no Buffer is made of it first). */
export function seal(key: CipherKey | Uint8Array, plaintext: Uint8Array | string, aad: Uint8Array): Buffer {
  const iv = nonce();
  const cipher = createCipheriv('aes-256-gcm', keyOf(key), iv);
  cipher.setAAD(aad);
  const body = typeof plaintext === 'string' ? cipher.update(plaintext, 'utf8') : cipher.update(plaintext);
  const rest = cipher.final();
  return Buffer.concat([iv, cipher.getAuthTag(), body, rest]);
}

/** Returns null when the tag does not verify (wrong key, or the bytes were changed). */
export function open(key: CipherKey | Uint8Array, sealed: Uint8Array, aad: Uint8Array): Buffer | null {
  if (sealed.length < NONCE + TAG) return null;
  const decipher = createDecipheriv('aes-256-gcm', keyOf(key), sealed.subarray(0, NONCE));
  decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(NONCE, NONCE + TAG));
  try {
    const body = decipher.update(sealed.subarray(NONCE + TAG));
    const rest = decipher.final();
    return rest.length === 0 ? body : Buffer.concat([body, rest]);
  } catch {
    return null;
  }
}
