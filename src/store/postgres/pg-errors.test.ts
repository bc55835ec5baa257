import { describe, expect, it } from 'vitest';
import { translatePgError } from './pg-errors.ts';

/** PostgreSQL's error replies carry their SQLSTATE in `code`, as pg reports them. */
function pgError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('PostgreSQL errors', () => {
  it('a full disk (53100) says the disk is full', () => {
    const translated = translatePgError(
      pgError('53100', 'could not extend file "base/16384/16402": No space left on device'),
      'postgres://127.0.0.1:5432/app (schema countersign)',
    ) as Error & { code: string };
    expect(translated.code).toBe('STORE_UNAVAILABLE');
    expect(translated.message).toContain(
      'The disk of the PostgreSQL server behind postgres://127.0.0.1:5432/app',
    );
    expect(translated.message).toContain('is full');
    expect(translated.message).toContain('Free space on the database server');
    expect(translated.message).not.toContain('COUNTERSIGN_STORE');
  });

  it('other resource shortages (class 53) still say to try again', () => {
    const translated = translatePgError(pgError('53300', 'too many connections'), 'x') as Error;
    expect(translated.message).toContain('not accepting work right now');
  });
});
