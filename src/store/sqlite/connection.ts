import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import { createGroupCommit } from './group-commit.ts';
import { translateSqliteError } from './sqlite-errors.ts';

export type Sql = (text: string) => StatementSync;

export interface Connection {
  /** A prepared statement for this text, prepared once per connection. */
  sql: Sql;
  /** Runs work on the open connection, turning SQLite failures into typed errors. */
  run<T>(work: () => T): T;
  /**
   * BEGIN IMMEDIATE: the write lock is taken up front, waiting up to the busy timeout.
   * Writes that overlap in time share one transaction (group commit); each settles once
   * its transaction is durable.
   */
  write<T>(work: () => T): Promise<T>;
  /** A deferred transaction: several reads see one consistent snapshot. */
  snapshotRead<T>(work: () => T): T;
  close(): void;
}

/**
 * Every write takes the lock at BEGIN: a deferred transaction that reads first and then
 * writes can fail with SQLITE_BUSY half-way, without waiting, once another process has
 * committed in between — which with several processes on one file is routine.
 */
export function createConnection(
  db: DatabaseSync,
  path: string,
  onCommit?: (writes: number) => void,
): Connection {
  const statements = new Map<string, StatementSync>();

  function sql(text: string): StatementSync {
    let statement = statements.get(text);
    if (statement === undefined) {
      statement = db.prepare(text);
      statements.set(text, statement);
    }
    return statement;
  }

  function run<T>(work: () => T): T {
    if (!db.isOpen) {
      throw new StoreUnavailableError(`The store at ${path} is closed.`, {
        hint: 'Open the store again; a closed store cannot be reused.',
      });
    }
    try {
      return work();
    } catch (error) {
      throw translateSqliteError(error, path);
    }
  }

  function snapshotRead<T>(work: () => T): T {
    return run(() => {
      db.exec('BEGIN');
      try {
        const result = work();
        db.exec('COMMIT');
        return result;
      } catch (error) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw error;
      }
    });
  }

  const group = createGroupCommit(db, {
    sql,
    guard: run,
    translate: (error) => translateSqliteError(error, path),
    ...(onCommit ? { onCommit } : {}),
  });

  return {
    sql,
    run,
    write: group.write,
    snapshotRead,
    close() {
      if (!db.isOpen) return;
      group.flush();
      statements.clear();
      db.close();
    },
  };
}
