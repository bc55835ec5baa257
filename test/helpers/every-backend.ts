import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { createEncryption } from '../../src/crypto/encryption.ts';
import { envKeyProvider } from '../../src/crypto/env-key-provider.ts';
import { createMemoryStore } from '../../src/store/memory/memory-store.ts';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { dropSchema, freshSchema, TEST_PG_URL } from './postgres.ts';

export type ClosableStore = Store & { close(): Promise<void> };

/**
 * A fresh store of each backend, for a test that must hold on every one of them and is not
 * (yet) a conformance case: memory, SQLite in a temporary directory, PostgreSQL in a fresh
 * schema of `url`, and with `encrypted` PostgreSQL behind the encrypting codec too. What each
 * opens is removed after the file's tests (afterAll). PostgreSQL's names start "postgres".
 */
export function everyBackend(
  label: string,
  url: string | null,
  options: { encrypted?: boolean } = {},
): Record<string, () => Promise<ClosableStore>> {
  const schemas: string[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(schema);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const postgres = async (suffix: string) => {
    const schema = freshSchema(`${label}${suffix}`);
    schemas.push(schema);
    return { connectionString: url ?? TEST_PG_URL, schema, liveness: false };
  };
  const backends: Record<string, () => Promise<ClosableStore>> = {
    memory: async () => Object.assign(createMemoryStore(), { close: async () => {} }),
    sqlite: async () => {
      const dir = mkdtempSync(join(tmpdir(), `cs-${label}-`));
      dirs.push(dir);
      return createSqliteStore({ path: join(dir, 's.db') });
    },
    postgres: async () => createPostgresStore(await postgres('')),
  };
  if (options.encrypted) {
    const keys = `k1:${randomBytes(32).toString('base64')}`;
    backends['postgres, encrypted'] = async () => {
      const e = createEncryption(envKeyProvider(keys));
      return e.wrap(await createPostgresStore({ ...(await postgres('_enc')), codec: e.codec }));
    };
  }
  return backends;
}
