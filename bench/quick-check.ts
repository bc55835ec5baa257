import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.ts';

/**
 * What `check: 'quick'` (PRAGMA quick_check on open, as serve, worker and audit --verify do)
 * costs on a large store. Fills a real, migrated store file to the target size with
 * sessions, messages, requests and audit rows of realistic sizes, then times opening it with
 * and without the check. The file is in the page cache after filling, so the numbers are
 * the CPU cost of walking every page; a cold read adds reading the file from disk once.
 *
 *   node_modules/.bin/node bench/quick-check.ts [SIZE_MB=1024]
 */
const targetMb = Number(process.argv[2] ?? 1024);
const dir = mkdtempSync(join(tmpdir(), 'countersign-quick-check-'));
const path = join(dir, 'store.db');

try {
  createSqliteStore({ path }).close();
  fill(path, targetMb * 1024 * 1024);
  const bytes = statSync(path).size;
  const plain = timeOpen(() => createSqliteStore({ path }));
  const checked = [1, 2, 3].map(() => timeOpen(() => createSqliteStore({ path, check: 'quick' })));
  const best = Math.min(...checked);
  const result = {
    sizeMb: Math.round(bytes / 1024 / 1024),
    openMs: Math.round(plain),
    openWithQuickCheckMs: checked.map(Math.round),
    quickCheckMsPerGb: Math.round((best - plain) / (bytes / 1024 ** 3)),
    node: process.version,
  };
  console.log('| file size | open | open + quick_check (3 runs) | quick_check per GB |');
  console.log('| --- | --- | --- | --- |');
  console.log(
    `| ${result.sizeMb} MB | ${result.openMs} ms | ${result.openWithQuickCheckMs.join(' / ')} ms | ${result.quickCheckMsPerGb} ms |`,
  );
  await writeFile(
    join(import.meta.dirname, 'results', 'quick-check.json'),
    `${JSON.stringify(result, null, 2)}\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}

function timeOpen(open: () => { close(): Promise<void> }): number {
  const started = performance.now();
  const store = open();
  const elapsed = performance.now() - started;
  void store.close();
  return elapsed;
}

/** Bulk rows straight into the store's tables: the same b-trees and indexes a real store has. */
function fill(file: string, bytes: number): void {
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = DELETE');
  db.exec('PRAGMA synchronous = OFF');
  const session = db.prepare(
    'INSERT INTO sessions (id, agent, principal, created_at, updated_at, message_count, batch) VALUES (?, ?, ?, ?, ?, ?, NULL)',
  );
  const message = db.prepare('INSERT INTO messages (session, seq, at, body) VALUES (?, ?, ?, ?)');
  const approval = db.prepare(
    `INSERT INTO approvals (id, session, agent, call_id, tool, args_json, args_hash, effect, created_at, expires_at, status, decision)
     VALUES (?, ?, 'bookstore', ?, 'cancel_order', '{"orderId":1044}', ?, 'Cancels order 1044.', ?, ?, 'approved', ?)`,
  );
  const audit = db.prepare(
    'INSERT INTO audit (seq, at, kind, session, request_id, actor, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const at = new Date(0).toISOString();
  const body = JSON.stringify({ role: 'user', text: 'Please cancel my order 1044. '.repeat(28) });
  const hash = 'a'.repeat(64);
  const decision = JSON.stringify({ verdict: 'approved', by: 'alice', reason: null, at, kind: 'person' });
  const pageSize = Number(db.prepare('PRAGMA page_size').get()?.page_size);
  const size = () => Number(db.prepare('PRAGMA page_count').get()?.page_count) * pageSize;
  let seq = 0;
  let n = 0;
  while (size() < bytes) {
    db.exec('BEGIN');
    for (let i = 0; i < 100; i++, n++) {
      const id = `s${n}`;
      session.run(id, 'bookstore', 'c-100', at, at, 40);
      for (let m = 0; m < 40; m++) message.run(id, m, at, body);
      approval.run(`apr_${n}`, id, `call-${n}`, hash, at, at, decision);
      for (const kind of ['request.raised', 'request.decided', 'execution.started', 'execution.finished']) {
        seq += 1;
        audit.run(seq, at, kind, id, `apr_${n}`, 'alice', '{"tool":"cancel_order"}', hash, hash);
      }
    }
    db.exec('COMMIT');
  }
  db.exec('PRAGMA journal_mode = WAL');
  db.close();
}
