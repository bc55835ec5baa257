import { spawn } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { beforeAll, describe, expect, it } from 'vitest';
import { bookstoreAgent } from '../../examples/bookstore/app.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import { damageTablePage } from '../../src/store/sqlite/damage-page.fixture.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { binPath, runCli, tempStore } from '../helpers/cli.ts';

type Verdict = { ok: boolean; entries: number; brokenAt: number | null; missing?: unknown[] };
type ErrorOut = { error: { code: string; message: string } };

const DECIDED = 6;

/** A real store file: DECIDED sessions, each with one request a person decided (half approved). */
async function decidedStore(): Promise<{ spec: string; path: string }> {
  const spec = tempStore();
  const path = spec.slice('sqlite:'.length);
  const store = createSqliteStore({ path });
  const agent = bookstoreAgent.with({ store, model: createDemoModel() });
  for (let i = 0; i < DECIDED; i++) {
    const turn = await agent.chat(`s${i}`, 'Please cancel my order 1044.', { principal: 'c-100' });
    const id = turn.approvals[0]!.id;
    if (i % 2 === 0) await agent.approve(id, { by: 'alice' });
    else await agent.reject(id, { by: 'alice', reason: 'Not now.' });
  }
  await store.checkpoint();
  await store.close();
  return { spec, path };
}

function sql(path: string, text: string): void {
  const db = new DatabaseSync(path);
  try {
    db.exec(text);
  } finally {
    db.close();
  }
}

/** `countersign serve` on the store; resolves with its base URL and token, or rejects with what it printed. */
function serve(spec: string): Promise<{ base: string; token: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [binPath, 'serve', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', COUNTERSIGN_STORE: spec },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk) => {
    err += chunk;
  });
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (!out.includes('Press Ctrl+C')) return;
      const base = /Inbox: (http:\/\/127\.0\.0\.1:\d+)\//.exec(out)![1]!;
      const token = /with the token (\S+)/.exec(out)![1]!;
      const exited = new Promise<void>((done) => child.on('exit', () => done()));
      resolve({
        base,
        token,
        stop: async () => {
          child.kill('SIGTERM');
          await exited;
        },
      });
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out}${err}`)));
  });
}

describe('audit --verify notices a missing trail and a damaged file', () => {
  let intact: { spec: string; path: string };
  beforeAll(async () => {
    intact = await decidedStore();
  });

  it('an emptied audit table fails, naming what is missing; the HTTP route says the same', async () => {
    const env = { COUNTERSIGN_STORE: intact.spec };
    const before = await runCli(['audit', '--verify', '--json'], env);
    expect(before.code, before.stdout + before.stderr).toBe(0);
    expect((before.json as Verdict).ok).toBe(true);

    const emptied = tempStore();
    copyFileSync(intact.path, emptied.slice('sqlite:'.length));
    sql(emptied.slice('sqlite:'.length), 'DELETE FROM audit');
    const text = await runCli(['audit', '--verify'], { COUNTERSIGN_STORE: emptied });
    expect(text.code).toBe(3);
    expect(text.stdout).toMatch(
      new RegExp(
        `^AUDIT TRAIL INCOMPLETE \\(0 entries\\): the chain links up, but entries are missing: ${DECIDED} requests without request.raised \\(apr_\\w+, .*, …\\); ${DECIDED} requests without request.decided`,
      ),
    );
    expect(text.stdout).toContain('ledger rows without execution.started');
    const json = await runCli(['audit', '--verify', '--json'], { COUNTERSIGN_STORE: emptied });
    expect(json.code).toBe(3);
    const verdict = json.json as Verdict;
    expect(verdict).toMatchObject({ ok: false, entries: 0, brokenAt: null });
    expect(verdict.missing).toEqual([
      { missing: 'request.raised', count: DECIDED, first: expect.any(Array) },
      { missing: 'request.decided', count: DECIDED, first: expect.any(Array) },
      { missing: 'execution.started', count: DECIDED / 2, first: expect.any(Array) },
      { missing: 'execution.finished', count: DECIDED / 2, first: expect.any(Array) },
    ]);

    const server = await serve(emptied);
    try {
      const response = await fetch(`${server.base}/v1/audit/verify`, {
        headers: { authorization: `Bearer ${server.token}` },
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual(verdict);
    } finally {
      await server.stop();
    }
  });

  it('an audit table cut short fails although the remaining chain links up', async () => {
    const cut = tempStore();
    copyFileSync(intact.path, cut.slice('sqlite:'.length));
    sql(cut.slice('sqlite:'.length), 'DELETE FROM audit WHERE seq > (SELECT MAX(seq) - 3 FROM audit)');
    const run = await runCli(['audit', '--verify', '--json'], { COUNTERSIGN_STORE: cut });
    expect(run.code).toBe(3);
    expect(run.json).toMatchObject({ ok: false, brokenAt: null, missing: expect.any(Array) });
  });

  it('a damaged page: short commands carry on, audit --verify and serve refuse the file', async () => {
    const damaged = tempStore();
    const path = damaged.slice('sqlite:'.length);
    copyFileSync(intact.path, path);
    damageTablePage(path, 'messages');
    const env = { COUNTERSIGN_STORE: damaged };

    const pending = await runCli(['pending', '--json'], env);
    expect(pending.code).toBe(0);

    const verify = await runCli(['audit', '--verify', '--json'], env);
    expect(verify.code).toBe(1);
    const error = (verify.json as ErrorOut).error;
    expect(error.code).toBe('CORRUPT_DATA');
    expect(error.message).toContain(`The SQLite file at ${path} is damaged: PRAGMA quick_check reports`);
    expect(error.message).toContain('restore the file from a backup');
    expect(error.message).toContain(`sqlite3 '${path}' 'PRAGMA integrity_check;'`);

    await expect(serve(damaged)).rejects.toThrow(/CORRUPT_DATA: The SQLite file at .* is damaged/);
  });
});
