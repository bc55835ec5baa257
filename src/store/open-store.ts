import { resolve } from 'node:path';
import { ConfigError } from '../core/errors/config-error.ts';
import { encryptionFromEnv } from '../crypto/encryption.ts';
import { KeyNotReady } from '../crypto/key-not-ready.ts';
import type { PayloadCodec } from './codec.ts';
import type { DataKeys } from './ports/data-keys.ts';
import type { Store } from './store.ts';

export const DEFAULT_SQLITE_PATH = '.countersign/countersign.db';

const SUPPORTED =
  'Supported now: sqlite:PATH (a SQLite file, relative to the working directory), memory: (nothing is kept ' +
  'after the process exits), postgres://USER:PASSWORD@HOST:PORT/DATABASE[?schema=NAME] (a PostgreSQL ' +
  `database shared by several processes), or leave COUNTERSIGN_STORE unset for sqlite:${DEFAULT_SQLITE_PATH}.`;

/**
 * Opens the store a COUNTERSIGN_STORE-style spec names. Backends are imported only when
 * chosen, so commands that never touch a store do not pay for loading one.
 */
export async function openStore(
  spec?: string,
  options: {
    cwd?: string;
    env?: Record<string, string | undefined>;
    /** SQLite only: check the file for damage on open (PRAGMA quick_check). */
    check?: 'quick';
  } = {},
): Promise<Store> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const trimmed = spec?.trim() ?? '';
  const check = options.check ?? 'none';
  // COUNTERSIGN_ENCRYPTION_KEYS: the backend gets the encrypting codec, and the store it
  // returns loads data keys as calls need them (src/crypto/).
  const encryption = encryptionFromEnv(env);
  const codec = encryption?.codec;
  const wrap = <S extends Store & DataKeys>(store: S): S =>
    encryption === null ? store : encryption.wrap(store);
  if (trimmed === '') return wrap(await openSqlite(resolve(cwd, DEFAULT_SQLITE_PATH), check, codec));
  if (trimmed === 'memory:') {
    const { createMemoryStore } = await import('./memory/memory-store.ts');
    return wrap(createMemoryStore());
  }
  if (trimmed.startsWith('sqlite:')) {
    const path = trimmed.slice('sqlite:'.length);
    if (path === '') {
      throw new ConfigError('COUNTERSIGN_STORE is "sqlite:" without a file path.', { hint: SUPPORTED });
    }
    // A URL-style "sqlite://x" would silently resolve to "/x"; say so instead of guessing.
    if (path.startsWith('//')) {
      throw new ConfigError(`COUNTERSIGN_STORE "${trimmed}" is URL-style; write sqlite:PATH without "//".`, {
        hint: SUPPORTED,
      });
    }
    return wrap(await openSqlite(resolve(cwd, path), check, codec));
  }
  if (/^postgres(?:ql)?:\/\//i.test(trimmed)) return wrap(await openPostgres(trimmed, env, codec));
  if (trimmed.startsWith('file:')) {
    throw new ConfigError(
      `COUNTERSIGN_STORE "${trimmed}" is a file: checkpoint store; it holds workflow runs only, not agent sessions, so this command cannot use it.`,
      { hint: SUPPORTED },
    );
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(trimmed)?.[1];
  throw new ConfigError(
    scheme === undefined
      ? `COUNTERSIGN_STORE "${trimmed}" does not name a store.`
      : `COUNTERSIGN_STORE uses "${scheme}:", which this version of countersign does not support.`,
    { hint: SUPPORTED },
  );
}

/**
 * A store written before the one request model adopts its legacy requests while it opens,
 * writing rows through the codec before any data key can be loaded. With keys set, such a
 * store is opened once with the JSON codec to finish that (rows the encrypting codec reads as
 * they are: they were plain JSON before), then again with encryption.
 */
async function adoptingFirst<S extends { close(): Promise<void> }>(
  open: (codec?: PayloadCodec) => Promise<S>,
  codec?: PayloadCodec,
): Promise<S> {
  try {
    return await open(codec);
  } catch (error) {
    if (codec === undefined || !(error instanceof KeyNotReady)) throw error;
    await (await open()).close();
    return open(codec);
  }
}

async function openSqlite(path: string, check: 'quick' | 'none', codec?: PayloadCodec) {
  const { createSqliteStore } = await import('./sqlite/sqlite-store.ts');
  return adoptingFirst(
    async (c) => createSqliteStore({ path, check, ...(c === undefined ? {} : { codec: c }) }),
    codec,
  );
}

/** `?schema=NAME` (or COUNTERSIGN_PG_SCHEMA) picks the schema; pg itself is loaded only here. */
async function openPostgres(spec: string, env: Record<string, string | undefined>, codec?: PayloadCodec) {
  const { parsePostgresSpec } = await import('./postgres/postgres-spec.ts');
  const { createPostgresStore } = await import('./postgres/postgres-store.ts');
  return adoptingFirst(
    (c) => createPostgresStore({ ...parsePostgresSpec(spec, env), ...(c === undefined ? {} : { codec: c }) }),
    codec,
  );
}
