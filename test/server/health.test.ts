import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { bookstoreAgent } from '../../examples/bookstore/app.ts';
import { createServer } from '../../src/server/create-server.ts';
import { startServer } from '../../src/server/start-server.ts';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { binPath, tempStore } from '../helpers/cli.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL, withAdmin } from '../helpers/postgres.ts';

const pg = await postgresForTests();

async function listening(store: Store) {
  const server = createServer({ agents: [bookstoreAgent], store, watchIntervalMs: 0 });
  return startServer(server, { host: '127.0.0.1', port: 0 });
}

async function probe(base: string, path: string) {
  const response = await fetch(`${base}${path}`);
  return { status: response.status, headers: response.headers, body: (await response.json()) as unknown };
}

describe('health and readiness', () => {
  it('countersign serve answers /healthz and /readyz without a token', async () => {
    const child = spawn(process.execPath, [binPath, 'serve', '--port', '0'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', COUNTERSIGN_STORE: tempStore() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      const base = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk) => {
          out += chunk;
          const match = /Inbox: (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
          if (match && out.includes('Press Ctrl+C')) resolve(match[1]!);
        });
        child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
      });
      expect(await probe(base, '/healthz')).toMatchObject({ status: 200, body: { status: 'ok' } });
      const ready = await probe(base, '/readyz');
      expect(ready).toMatchObject({ status: 200, body: { status: 'ready', store: 'sqlite' } });
      expect(ready.headers.get('cache-control')).toBe('no-store');
      expect((await fetch(`${base}/readyz`, { method: 'HEAD' })).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('SQLite: /readyz is 503 with a reason once the store cannot be read; /healthz stays 200', async () => {
    const store = createSqliteStore({
      path: join(mkdtempSync(join(tmpdir(), 'countersign-health-')), 'h.db'),
    });
    const running = await listening(store);
    try {
      expect((await probe(running.url, '/readyz')).status).toBe(200);
      await store.close();
      const down = await probe(running.url, '/readyz');
      expect(down.status).toBe(503);
      expect(down.headers.get('retry-after')).toBe('5');
      expect(down.body).toEqual({
        status: 'unavailable',
        store: 'sqlite',
        reason: expect.stringMatching(
          /^the sqlite store failed a read with [A-Z_a-z ]+; check that the store is up/,
        ),
      });
      expect(JSON.stringify(down.body)).not.toContain(tmpdir());
      expect(await probe(running.url, '/healthz')).toMatchObject({ status: 200 });
    } finally {
      await running.close();
    }
  });

  it('SQLite: /readyz is 503 once another instance has upgraded the schema past this one', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'countersign-health-')), 'h.db');
    const store = createSqliteStore({ path });
    const running = await listening(store);
    try {
      expect((await probe(running.url, '/readyz')).status).toBe(200);
      const { known } = await store.schemaVersion();
      // What a newer countersign's migration leaves behind, from another connection.
      const other = new DatabaseSync(path);
      other.exec(`PRAGMA user_version = ${known + 1}`);
      other.close();
      const stale = await probe(running.url, '/readyz');
      expect(stale.status).toBe(503);
      expect(stale.body).toEqual({
        status: 'unavailable',
        store: 'sqlite',
        reason: `the store's schema is at version ${known + 1}, newer than this countersign knows (${known}): another instance upgraded it; upgrade this one`,
      });
      expect(await probe(running.url, '/healthz')).toMatchObject({ status: 200 });
    } finally {
      await running.close();
      await store.close();
    }
  });

  describe.skipIf(pg === null)('PostgreSQL', () => {
    const schema = freshSchema('health');
    afterAll(async () => {
      await dropSchema(schema);
    });

    it('ready while the pool answers; 503 once it is closed', async () => {
      const store = await createPostgresStore({ connectionString: TEST_PG_URL, schema });
      const running = await listening(store);
      try {
        expect((await probe(running.url, '/readyz')).body).toEqual({ status: 'ready', store: 'postgres' });
        await store.close();
        const down = await probe(running.url, '/readyz');
        expect(down.status).toBe(503);
        expect(down.body).toMatchObject({ status: 'unavailable', store: 'postgres' });
      } finally {
        await running.close();
      }
    });

    it('503 once another instance has migrated the schema past this one', async () => {
      const store = await createPostgresStore({ connectionString: TEST_PG_URL, schema });
      const running = await listening(store);
      try {
        expect((await probe(running.url, '/readyz')).status).toBe(200);
        const { known } = await store.schemaVersion();
        await withAdmin(async (client) => {
          await client.query(`INSERT INTO "${schema}".migrations (version, name) VALUES ($1, 'future')`, [
            known + 1,
          ]);
        });
        const stale = await probe(running.url, '/readyz');
        expect(stale.status).toBe(503);
        expect((stale.body as { reason: string }).reason).toContain(
          `newer than this countersign knows (${known})`,
        );
      } finally {
        await running.close();
        await store.close();
      }
    });
  });
});
