import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  storeUrl,
  TEST_PG_URL,
} from '../../test/helpers/postgres.ts';
import { openStore } from './open-store.ts';
import type { Store } from './store.ts';

describe('openStore', () => {
  let cwd: string;
  let store: Store | undefined;

  beforeEach(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'countersign-open-'));
  });

  afterEach(async () => {
    await store?.close();
    store = undefined;
    await rm(cwd, { recursive: true, force: true });
  });

  it.each([undefined, '', '  '])('opens ./.countersign/countersign.db for %j', async (spec) => {
    store = await openStore(spec, { cwd });
    expect(store.kind).toBe('sqlite');
    expect((await stat(join(cwd, '.countersign', 'countersign.db'))).isFile()).toBe(true);
  });

  it('opens sqlite:PATH relative to the working directory', async () => {
    store = await openStore('sqlite:data/app.db', { cwd });
    await store.setState('ns', 'k', 1);
    expect((await stat(join(cwd, 'data', 'app.db'))).isFile()).toBe(true);
  });

  it('opens an absolute sqlite:PATH as it is', async () => {
    const path = join(cwd, 'abs', 'x.db');
    store = await openStore(`sqlite:${path}`, { cwd: '/nonexistent-cwd' });
    expect((await stat(path)).isFile()).toBe(true);
  });

  it('opens a memory store for memory:', async () => {
    store = await openStore('memory:', { cwd });
    expect(store.kind).toBe('memory');
    await store.setState('ns', 'k', 'v');
    expect(await store.getState('ns', 'k')).toBe('v');
  });

  it.each([
    ['mysql://user@host/db', /mysql:/],
    ['file:some/dir', /file:/],
    ['sqlite:', /without a file path/],
    ['sqlite://data/app.db', /URL-style/],
    ['countersign.db', /does not name a store/],
  ])('refuses %s with CONFIG_ERROR listing what is supported', async (spec, detail) => {
    const attempt = openStore(spec, { cwd });
    await expect(attempt).rejects.toMatchObject({ code: 'CONFIG_ERROR' });
    await expect(attempt).rejects.toThrow(detail);
    await expect(attempt).rejects.toThrow(/sqlite:PATH.*memory:.*postgres:\/\//);
  });

  it('refuses an unusable schema name before connecting anywhere', async () => {
    const attempt = openStore('postgres://nobody@127.0.0.1:1/db?schema=Robert%27);--', { cwd });
    await expect(attempt).rejects.toMatchObject({ code: 'CONFIG_ERROR' });
    const fromEnv = openStore('postgresql://nobody@127.0.0.1:1/db', {
      cwd,
      env: { COUNTERSIGN_PG_SCHEMA: 'pg_x' },
    });
    await expect(fromEnv).rejects.toMatchObject({ code: 'CONFIG_ERROR' });
  });

  it('a postgres:// store that cannot be reached is STORE_UNAVAILABLE', async () => {
    const attempt = openStore('postgres://nobody@127.0.0.1:1/db', { cwd });
    await expect(attempt).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });
});

const pg = await postgresForTests();

describe.skipIf(pg === null)('openStore on PostgreSQL', () => {
  const schemas: string[] = [];
  let store: Store | undefined;

  afterEach(async () => {
    await store?.close();
    store = undefined;
    for (const schema of schemas.splice(0)) await dropSchema(schema);
  });

  it('opens postgres://…?schema=NAME in that schema', async () => {
    const schema = freshSchema('open');
    schemas.push(schema);
    store = await openStore(storeUrl(schema));
    expect(store).toMatchObject({ kind: 'postgres', schema });
    await store.setState('ns', 'k', 'v');
    expect(await store.getState('ns', 'k')).toBe('v');
  });

  it('opens postgresql:// in the schema COUNTERSIGN_PG_SCHEMA names', async () => {
    const schema = freshSchema('open_env');
    schemas.push(schema);
    const url = TEST_PG_URL.replace(/^postgres(ql)?:/, 'postgresql:');
    store = await openStore(url, { env: { COUNTERSIGN_PG_SCHEMA: schema } });
    expect(store).toMatchObject({ kind: 'postgres', schema });
  });
});
