import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';
import { createGroupCommit, type GroupCommit } from './group-commit.ts';
import { openDatabase } from './open-database.ts';
import { translateSqliteError } from './sqlite-errors.ts';

let dir: string;
let path: string;
/** The connection group commit writes on, opened exactly as the store opens it. */
let db: DatabaseSync;
/** An independent connection: what it sees is what another process would see. */
let reader: DatabaseSync;
let others: DatabaseSync[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'countersign-group-commit-'));
  path = join(dir, 'store.db');
  db = openDatabase(path, 5_000);
  db.exec('CREATE TABLE items (key TEXT PRIMARY KEY, value INTEGER)');
  reader = new DatabaseSync(path);
  others = [];
});

afterEach(() => {
  vi.restoreAllMocks();
  for (const connection of [db, reader, ...others]) if (connection.isOpen) connection.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Wired as connection.ts wires it, so errors reach callers as they would in the store. */
function group(maxBatch?: number): GroupCommit {
  return createGroupCommit(db, {
    sql: (text) => db.prepare(text),
    guard<T>(work: () => T): T {
      try {
        return work();
      } catch (error) {
        throw translateSqliteError(error, path);
      }
    },
    translate: (error) => translateSqliteError(error, path),
    ...(maxBatch === undefined ? {} : { maxBatch }),
  });
}

function insert(key: string, value = 0): void {
  db.prepare('INSERT INTO items (key, value) VALUES (?, ?)').run(key, value);
}

/** Committed keys, as a second connection sees them. */
function committed(): string[] {
  return reader
    .prepare('SELECT key FROM items ORDER BY key')
    .all()
    .map((row) => String(row.key));
}

/** Changes whenever another connection commits, so equal values mean "no commit in between". */
function dataVersion(): number {
  return Number(reader.prepare('PRAGMA data_version').get()!.data_version);
}

function countExec(text: string): () => number {
  const spy = vi.spyOn(db, 'exec');
  return () => spy.mock.calls.filter(([sql]) => sql === text).length;
}

describe('createGroupCommit', () => {
  it('runs writes issued in the same tick in one transaction, and writes in later ticks in their own', async () => {
    const g = group();
    const commits = countExec('COMMIT');
    // Seen from outside the transaction: if any write committed before the next one ran,
    // the later write would observe a different data_version.
    const versions: number[] = [];
    const writes = Array.from({ length: 10 }, (_, i) =>
      g.write(() => {
        versions.push(dataVersion());
        insert(`k${i}`);
        return i;
      }),
    );
    expect(await Promise.all(writes)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(commits()).toBe(1);
    expect(new Set(versions).size).toBe(1);
    expect(committed()).toHaveLength(10);

    const before = dataVersion();
    await g.write(() => insert('later-1'));
    const between = dataVersion();
    await g.write(() => insert('later-2'));
    expect(commits()).toBe(3);
    expect(between).not.toBe(before);
    expect(dataVersion()).not.toBe(between);
  });

  it('rolls back only the write that throws; the others in the batch commit and settle in order', async () => {
    const g = group();
    const order: string[] = [];
    const track = <T>(name: string, promise: Promise<T>) =>
      promise.then(
        (value) => {
          order.push(name);
          return value;
        },
        (error: unknown) => {
          order.push(name);
          throw error;
        },
      );
    const first = track(
      'first',
      g.write(() => {
        insert('a', 1);
        return 'A';
      }),
    );
    // Its own insert succeeds before the duplicate key fails: the savepoint must undo both.
    const failing = track(
      'failing',
      g.write(() => {
        insert('x');
        insert('a');
        return 'X';
      }),
    );
    const last = track(
      'last',
      g.write(() => {
        insert('c', 3);
        return 'C';
      }),
    );

    await expect(first).resolves.toBe('A');
    const error = await failing.catch((caught: unknown) => caught);
    // Translated as the store translates SQLite errors, with the SQLite error kept as cause.
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({ code: 'INVALID_INPUT', cause: { code: 'ERR_SQLITE_ERROR' } });
    await expect(last).resolves.toBe('C');
    expect(order).toEqual(['first', 'failing', 'last']);
    expect(committed()).toEqual(['a', 'c']);
  });

  it('rolls back a lone write that throws and leaves the connection usable', async () => {
    const g = group();
    await expect(
      g.write(() => {
        insert('x');
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(db.isTransaction).toBe(false);
    expect(committed()).toEqual([]);
    await g.write(() => insert('y'));
    expect(committed()).toEqual(['y']);
  });

  it('settles a write only once its data is visible to another connection', async () => {
    const g = group();
    const seenOnSettle: string[][] = [];
    const writes = ['a', 'b', 'c'].map((key) =>
      g
        .write(() => {
          insert(key);
          // Queued and running, but not yet committed: nothing is visible outside.
          expect(committed()).toEqual([]);
        })
        .then(() => {
          seenOnSettle.push(committed());
        }),
    );
    expect(committed()).toEqual([]);
    await Promise.all(writes);
    expect(seenOnSettle).toEqual([
      ['a', 'b', 'c'],
      ['a', 'b', 'c'],
      ['a', 'b', 'c'],
    ]);
  });

  it('rejects every write when COMMIT itself fails, so none is reported as committed', async () => {
    // A deferred foreign key is checked only at COMMIT: each write's statements succeed and
    // its savepoint is released, and the violation surfaces when the batch commits.
    db.exec('PRAGMA foreign_keys = ON');
    db.exec(`CREATE TABLE parents (id TEXT PRIMARY KEY);
      CREATE TABLE children (id TEXT PRIMARY KEY,
        parent TEXT NOT NULL REFERENCES parents(id) DEFERRABLE INITIALLY DEFERRED)`);
    const g = group();
    const results = await Promise.allSettled([
      g.write(() => insert('a')),
      g.write(() => db.prepare("INSERT INTO children (id, parent) VALUES ('c', 'missing')").run()),
      g.write(() => insert('b')),
    ]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(committed()).toEqual([]);
    expect(db.isTransaction).toBe(false);
  });

  it('rejects the whole batch when BEGIN IMMEDIATE cannot get the lock, and recovers once it is free', async () => {
    const holder = new DatabaseSync(path);
    others.push(holder);
    holder.exec('BEGIN IMMEDIATE');
    db.exec('PRAGMA busy_timeout = 50');
    const g = group();
    let ran = 0;
    const results = await Promise.allSettled(
      ['a', 'b', 'c'].map((key) =>
        g.write(() => {
          ran++;
          insert(key);
        }),
      ),
    );
    for (const result of results) {
      expect(result.status).toBe('rejected');
      const reason = (result as PromiseRejectedResult).reason;
      expect(reason).toBeInstanceOf(StoreUnavailableError);
      expect(reason).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    }
    expect(ran).toBe(0);
    expect(db.isTransaction).toBe(false);

    holder.exec('ROLLBACK');
    await Promise.all([g.write(() => insert('d')), g.write(() => insert('e'))]);
    expect(committed()).toEqual(['d', 'e']);
  });

  it('rejects every write, including those that had succeeded, when SQLite rolls back the whole transaction', async () => {
    // INSERT OR ROLLBACK is SQLite's own "this conflict aborts the transaction": it ends the
    // transaction, savepoints included, just as a full disk or an I/O error would. The
    // write before it had succeeded but is gone now, so reporting it as committed would lie.
    db.exec("INSERT INTO items (key) VALUES ('taken')");
    const g = group();
    const results = await Promise.allSettled([
      g.write(() => insert('a')),
      g.write(() => db.prepare("INSERT OR ROLLBACK INTO items (key) VALUES ('taken')").run()),
      g.write(() => insert('c')),
    ]);
    for (const result of results) {
      expect(result.status).toBe('rejected');
      expect((result as PromiseRejectedResult).reason).toMatchObject({ code: 'INVALID_INPUT' });
    }
    expect(committed()).toEqual(['taken']);
    expect(db.isTransaction).toBe(false);

    await g.write(() => insert('d'));
    expect(committed()).toEqual(['d', 'taken']);
  });

  it('rejects every write of a batch whose work ended the transaction itself', async () => {
    // No error is thrown here, so only the missing transaction tells the batch that the
    // earlier write's insert is gone.
    const g = group();
    const results = await Promise.allSettled([
      g.write(() => insert('a')),
      g.write(() => db.exec('ROLLBACK')),
      g.write(() => insert('c')),
    ]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(committed()).toEqual([]);
    expect(db.isTransaction).toBe(false);
  });

  it('does not acknowledge a lone write whose transaction SQLite rolled back without an error reaching us', async () => {
    db.exec("INSERT INTO items (key) VALUES ('taken')");
    const g = group();
    const [result] = await Promise.allSettled([
      g.write(() => {
        insert('a');
        // INSERT OR ROLLBACK ends the transaction; the work swallows the error and "succeeds".
        try {
          db.prepare("INSERT OR ROLLBACK INTO items (key) VALUES ('taken')").run();
        } catch {}
        return 'done';
      }),
    ]);
    expect(result).toMatchObject({ status: 'rejected', reason: { code: 'STORE_UNAVAILABLE' } });
    expect(committed()).toEqual(['taken']);
  });

  it('refuses a maxBatch below one instead of looping on empty batches', () => {
    expect(() => group(0)).toThrow(/maxBatch/);
  });

  it('caps a batch at maxBatch writes and commits them all', async () => {
    const g = group(3);
    const commits = countExec('COMMIT');
    const versions: number[] = [];
    const writes = Array.from({ length: 7 }, (_, i) =>
      g.write(() => {
        versions.push(dataVersion());
        insert(`k${i}`);
        return i;
      }),
    );
    expect(await Promise.all(writes)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(commits()).toBe(3);
    // Batches of 3, 3 and 1, in queue order: a commit happens exactly at each cap.
    const [a, b, c] = [versions[0], versions[3], versions[6]];
    expect(versions).toEqual([a, a, a, b, b, b, c]);
    expect(new Set([a, b, c]).size).toBe(3);
    expect(committed()).toHaveLength(7);
  });

  it('flush() commits queued writes synchronously and runs each work once', async () => {
    const g = group();
    const runs = [0, 0];
    const writes = [0, 1].map((i) =>
      g.write(() => {
        runs[i]!++;
        insert(`k${i}`);
        return i;
      }),
    );
    expect(committed()).toEqual([]);
    g.flush();
    // No await yet: this is what close() relies on before it closes the connection.
    expect(committed()).toEqual(['k0', 'k1']);
    expect(await Promise.all(writes)).toEqual([0, 1]);
    // The setImmediate scheduled by write() still fires; it must find nothing left to run.
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).toEqual([1, 1]);
  });

  it('passes a typed countersign error from work to the caller unchanged', async () => {
    const g = group();
    const thrown = new InvalidInputError('x', { hint: 'fix x' });
    const [batched, alongside] = await Promise.allSettled([
      g.write(() => {
        throw thrown;
      }),
      g.write(() => insert('ok')),
    ]);
    expect(batched).toEqual({ status: 'rejected', reason: thrown });
    expect((batched as PromiseRejectedResult).reason).toBe(thrown);
    expect(alongside.status).toBe('fulfilled');

    const lone = await g
      .write(() => {
        throw thrown;
      })
      .catch((error: unknown) => error);
    expect(lone).toBe(thrown);
    expect(lone).toBeInstanceOf(InvalidInputError);
    expect(lone).toMatchObject({ code: 'INVALID_INPUT', hint: 'fix x' });
  });
});
