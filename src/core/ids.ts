import { secureRandomBytes } from './random-bytes.ts';

const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';

/** 160 random bits in base32: unguessable, URL- and shell-safe, fixed length. */
export function newId(prefix: string): string {
  const bytes = secureRandomBytes(20);
  let out = '';
  let bits = 0;
  let acc = 0;
  for (const byte of bytes) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return `${prefix}_${out}`;
}

/** Session ids and run ids are chosen by callers; keep them to a safe, bounded alphabet. */
export const userIdPattern = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;
