import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { at, leasedSession, raise, request, user } from '../conformance/fixtures.ts';
import { openStore } from '../open-store.ts';
import { damageTablePage } from './damage-page.fixture.ts';
import { translateSqliteError } from './sqlite-errors.ts';
import { createSqliteStore } from './sqlite-store.ts';

describe('SQLite files that are damaged or full', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'countersign-damage-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A real store file with enough messages to span several pages, checkpointed and closed. */
  async function realFile(): Promise<string> {
    const path = join(dir, 'store.db');
    const store = createSqliteStore({ path });
    await leasedSession(store, 's1');
    await store.commitStep({
      session: 's1',
      leaseOwner: 'run-1',
      expectedMessageCount: 0,
      append: Array.from({ length: 200 }, (_, i) => user(`message ${i} ${'x'.repeat(200)}`)),
      at: at(1),
    });
    await raise(store, 's1', [request({ id: 'r1', session: 's1' })]);
    await store.checkpoint();
    await store.close();
    return path;
  }

  it('check: quick refuses a file with a damaged page that ordinary reads do not touch', async () => {
    const original = await realFile();
    const copy = join(dir, 'copy.db');
    await copyFile(original, copy);
    damageTablePage(copy, 'messages');

    // Without the check the damage goes unnoticed by anything that does not read that page.
    const unchecked = createSqliteStore({ path: copy });
    expect((await unchecked.listApprovals({ status: 'pending' })).map((approval) => approval.id)).toEqual([
      'r1',
    ]);
    const read = unchecked.loadMessages('s1');
    await expect(read).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
    await expect(read).rejects.toThrow('restore the file from a backup');
    await unchecked.close();

    const opening = () => createSqliteStore({ path: copy, check: 'quick' });
    expect(opening).toThrow(expect.objectContaining({ code: 'CORRUPT_DATA' }));
    expect(opening).toThrow(`The SQLite file at ${copy} is damaged`);
    expect(opening).toThrow(`sqlite3 '${copy}' 'PRAGMA integrity_check;'`);
    await expect(openStore(`sqlite:${copy}`, { check: 'quick' })).rejects.toMatchObject({
      code: 'CORRUPT_DATA',
    });

    // The intact original passes the same check.
    const intact = createSqliteStore({ path: original, check: 'quick' });
    expect(await intact.loadMessages('s1')).toHaveLength(201);
    await intact.close();
  });

  it('a full disk says so, not that COUNTERSIGN_STORE is wrong', async () => {
    const path = await realFile();
    const db = new DatabaseSync(path);
    let failure: unknown;
    try {
      const pages = Number(db.prepare('PRAGMA page_count').get()?.page_count);
      // The file may not grow: exactly what SQLite reports when the disk has no room left.
      db.exec(`PRAGMA max_page_count = ${pages}`);
      db.prepare('INSERT INTO state (namespace, key, value) VALUES (?, ?, ?)').run(
        't',
        'k',
        'x'.repeat(100_000),
      );
    } catch (error) {
      failure = error;
    } finally {
      db.close();
    }
    expect(failure).toMatchObject({ errcode: 13 });
    const translated = translateSqliteError(failure, path) as Error & { code: string };
    expect(translated.code).toBe('STORE_UNAVAILABLE');
    expect(translated.message).toContain(`The disk holding the store at ${path} is full`);
    expect(translated.message).toContain('Free space on that disk');
    expect(translated.message).not.toContain('COUNTERSIGN_STORE');
  });
});
