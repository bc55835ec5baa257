import { createHash } from 'node:crypto';

/**
 * File names for caller-chosen strings (state namespaces and keys): every byte outside
 * [A-Za-z0-9_-] becomes %XX, so no name can be `..`, hold a separator or start with a dot.
 * Names too long for a file system are replaced by their hash.
 */
export function safeFileName(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9_-]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (out === '') return '%';
  return out.length <= 180 ? out : `%sha256-${createHash('sha256').update(value).digest('hex')}`;
}

/** Checkpoint files are named by their position in the run, so "latest" is a directory listing. */
export function checkpointFileName(seq: number): string {
  return `${String(seq).padStart(8, '0')}.json`;
}

export const checkpointFilePattern = /^(\d{8,})\.json$/;
