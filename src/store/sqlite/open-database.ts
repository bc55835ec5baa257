import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { CorruptDataError } from '../../core/errors/corrupt-data-error.ts';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import { migrations } from './migrations.ts';
import type { SqliteCheck } from './sqlite-check.ts';
import { damagedFileHint, isBusy, translateSqliteError } from './sqlite-errors.ts';

const pause = new Int32Array(new SharedArrayBuffer(4));

function sleepMs(ms: number): void {
  Atomics.wait(pause, 0, 0, ms);
}

/**
 * Switching a fresh file to WAL needs a moment of exclusive access and SQLite does not
 * always route that through the busy handler, so two processes opening the same new file
 * can see SQLITE_BUSY here; retry until the busy timeout would have run out.
 */
function enableWal(db: DatabaseSync, busyTimeoutMs: number): void {
  const deadline = Date.now() + busyTimeoutMs;
  for (;;) {
    try {
      const row = db.prepare('PRAGMA journal_mode=WAL').get();
      if (row?.journal_mode === 'wal') return;
      throw new StoreUnavailableError(
        `SQLite refused WAL mode (journal_mode is ${String(row?.journal_mode)}).`,
        {
          hint: 'Put the store on a local file system; WAL does not work on network shares.',
        },
      );
    } catch (error) {
      if (!isBusy(error) || Date.now() >= deadline) throw error;
      sleepMs(5 + Math.floor(Math.random() * 20));
    }
  }
}

function userVersion(db: DatabaseSync): number {
  const value = db.prepare('PRAGMA user_version').get()?.user_version;
  return typeof value === 'number' ? value : 0;
}

/**
 * One migration per BEGIN IMMEDIATE transaction, re-reading the version under the lock,
 * so processes racing to open a new file apply each migration exactly once.
 */
function migrate(db: DatabaseSync, path: string): void {
  for (;;) {
    const seen = userVersion(db);
    if (seen > migrations.length) {
      throw new StoreUnavailableError(
        `The store at ${path} has schema version ${seen}, newer than this countersign knows (${migrations.length}).`,
        { hint: 'Upgrade countersign, or check COUNTERSIGN_STORE points at the intended file.' },
      );
    }
    if (seen === migrations.length) return;
    db.exec('BEGIN IMMEDIATE');
    try {
      const version = userVersion(db);
      const migration = migrations[version];
      if (migration !== undefined) {
        db.exec(migration);
        // PRAGMA takes no bound parameters; `version` is a number we computed.
        db.exec(`PRAGMA user_version = ${version + 1}`);
      }
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  }
}

function createParentDirectory(path: string): void {
  try {
    mkdirSync(dirname(path), { recursive: true });
  } catch (cause) {
    throw new StoreUnavailableError(`The directory for the store at ${path} cannot be created.`, {
      hint: 'Check COUNTERSIGN_STORE and that the parent directory is writable.',
      cause,
    });
  }
}

/**
 * A damaged page is otherwise found only when some read happens to touch it, which for old
 * rows may be never; the long-running processes and `audit --verify` look on purpose.
 */
function quickCheck(db: DatabaseSync, path: string): void {
  let problems: string[];
  try {
    problems = db
      .prepare('PRAGMA quick_check(10)')
      .all()
      .map((row) => String(row.quick_check))
      .filter((text) => text !== 'ok');
  } catch (error) {
    // Damage bad enough stops the check itself with SQLITE_CORRUPT; say it was the check.
    const translated = translateSqliteError(error, path);
    if (!(translated instanceof CorruptDataError)) throw translated;
    problems = [`it stopped at a page it cannot read (SQLite: ${(error as Error).message})`];
  }
  if (problems.length === 0) return;
  throw new CorruptDataError(
    `The SQLite file at ${path} is damaged: PRAGMA quick_check reports ${problems.slice(0, 3).join('; ')}${problems.length > 3 ? ` (and ${problems.length - 3} more)` : ''}.`,
    { hint: damagedFileHint(path) },
  );
}

export function openDatabase(path: string, busyTimeoutMs: number, check: SqliteCheck = 'none'): DatabaseSync {
  if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new InvalidInputError(`busyTimeoutMs must be a non-negative integer, got ${busyTimeoutMs}.`);
  }
  createParentDirectory(path);
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(path);
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    enableWal(db, busyTimeoutMs);
    db.exec('PRAGMA synchronous = FULL');
    db.exec('PRAGMA foreign_keys = ON');
    // A row rewritten in place (a request decided, a session's batch replaced) leaves its old
    // version in the page's free space; FAST zeroes it while the page is being written anyway,
    // at no extra I/O, so an erasure later does not leave a decided request's words behind.
    // Erasure itself turns on the full mode for the pages it frees (sqlite-erasure.ts).
    db.exec('PRAGMA secure_delete = FAST');
    if (check === 'quick') quickCheck(db, path);
    migrate(db, path);
    return db;
  } catch (error) {
    if (db?.isOpen) db.close();
    throw translateSqliteError(error, path);
  }
}
