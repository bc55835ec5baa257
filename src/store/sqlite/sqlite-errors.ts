import { CorruptDataError } from '../../core/errors/corrupt-data-error.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';

// Primary result codes (https://sqlite.org/rescode.html); node:sqlite reports extended
// codes in `errcode`, whose low byte is the primary one.
const SQLITE_PERM = 3;
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;
const SQLITE_READONLY = 8;
const SQLITE_IOERR = 10;
const SQLITE_CORRUPT = 11;
const SQLITE_FULL = 13;
const SQLITE_CANTOPEN = 14;
const SQLITE_CONSTRAINT = 19;
const SQLITE_NOTADB = 26;

interface SqliteError {
  errcode: number;
  errstr: string;
  message: string;
}

function isSqliteError(value: unknown): value is SqliteError {
  return (
    value instanceof Error &&
    (value as { code?: unknown }).code === 'ERR_SQLITE_ERROR' &&
    typeof (value as { errcode?: unknown }).errcode === 'number'
  );
}

export function isBusy(error: unknown): boolean {
  if (!isSqliteError(error)) return false;
  const primary = error.errcode & 0xff;
  return primary === SQLITE_BUSY || primary === SQLITE_LOCKED;
}

/** What to do about a damaged file; shared by quick_check at open and SQLITE_CORRUPT on any read. */
export function damagedFileHint(path: string): string {
  return (
    'Nothing was changed. Stop every countersign process using it and restore the file from a backup. ' +
    `To see the damage yourself: sqlite3 '${path}' 'PRAGMA integrity_check;' (it prints "ok" for an intact file).`
  );
}

/** Turns what SQLite reports into countersign's typed errors; anything else passes through. */
export function translateSqliteError(error: unknown, path: string): unknown {
  if (CountersignError.is(error) || !isSqliteError(error)) return error;
  const primary = error.errcode & 0xff;
  const detail = `(SQLite: ${error.message})`;
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return new StoreUnavailableError(
        `The store at ${path} stayed locked past the busy timeout ${detail}.`,
        {
          hint: 'Another process holds a write lock; try again.',
          cause: error,
        },
      );
    case SQLITE_CANTOPEN:
    case SQLITE_NOTADB:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_IOERR:
      return new StoreUnavailableError(`The store at ${path} cannot be used ${detail}.`, {
        hint: 'Check COUNTERSIGN_STORE: it must name a writable SQLite file (sqlite:PATH) in an existing or creatable directory.',
        cause: error,
      });
    case SQLITE_FULL:
      return new StoreUnavailableError(`The disk holding the store at ${path} is full ${detail}.`, {
        hint: 'Free space on that disk (or move the store to a larger one) and try again; the write that failed was not made.',
        cause: error,
      });
    case SQLITE_CORRUPT:
      return new CorruptDataError(`The SQLite file at ${path} is damaged ${detail}.`, {
        hint: damagedFileHint(path),
        cause: error,
      });
    case SQLITE_CONSTRAINT:
      return new InvalidInputError(
        `The write conflicts with data already in the store at ${path} ${detail}.`,
        {
          cause: error,
        },
      );
    default:
      return error;
  }
}
