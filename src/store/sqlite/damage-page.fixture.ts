import { closeSync, openSync, writeSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';

/**
 * Overwrites the root page of `table` in a SQLite file with garbage, the way a bad disk
 * sector or a torn copy would. The file must be checkpointed (no WAL) and closed.
 */
export function damageTablePage(path: string, table: string): number {
  const db = new DatabaseSync(path);
  let page: number;
  let pageSize: number;
  try {
    page = Number(db.prepare('SELECT rootpage FROM sqlite_schema WHERE name = ?').get(table)?.rootpage);
    pageSize = Number(db.prepare('PRAGMA page_size').get()?.page_size);
  } finally {
    db.close();
  }
  if (!Number.isInteger(page) || page < 2) throw new Error(`no table ${table} in ${path}`);
  const garbage = Buffer.alloc(pageSize, 0);
  // A b-tree page header byte SQLite never writes (0x0d is a table leaf), then junk.
  garbage[0] = 0x77;
  for (let i = 1; i < pageSize; i++) garbage[i] = (i * 131) & 0xff;
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, garbage, 0, pageSize, (page - 1) * pageSize);
  } finally {
    closeSync(fd);
  }
  return page;
}
