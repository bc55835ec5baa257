import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe } from 'vitest';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL } from '../../test/helpers/postgres.ts';
import { describeCheckpointStoreConformance } from '../store/conformance/checkpoint-store-conformance.ts';
import { dataKeyCases } from '../store/conformance/data-key-cases.ts';
import { ALL_STORE_SUITES, describeStoreConformance } from '../store/conformance/store-conformance.ts';
import { createFileCheckpointStore, type FileCheckpointStore } from '../store/fs/file-checkpoint-store.ts';
import { createMemoryStore } from '../store/memory/memory-store.ts';
import { createPostgresStore } from '../store/postgres/postgres-store.ts';
import { createSqliteStore } from '../store/sqlite/sqlite-store.ts';
import { createEncryption } from './encryption.ts';
import { envKeyProvider } from './env-key-provider.ts';

/*
 * The conformance suites again with encryption on: every payload of every case goes through
 * the encrypting codec, data keys are created and loaded as the cases need them, and a
 * sibling (a second process) unwraps them with the same keys. A backend that kept a value
 * outside the codec, or decoded one with the wrong scope, fails here.
 */
const keys = `k2:${randomBytes(32).toString('base64')},k1:${randomBytes(32).toString('base64')}`;
const encryption = () => createEncryption(envKeyProvider(keys));
const pg = await postgresForTests();

function sqlite(path: string) {
  const e = encryption();
  return e.wrap(createSqliteStore({ path, codec: e.codec }));
}

describeStoreConformance(
  {
    name: 'sqlite, encrypted',
    create: async () => sqlite(join(mkdtempSync(join(tmpdir(), 'countersign-enc-')), 'store.db')),
    destroy: async (store) => rmSync(dirname(store.path), { recursive: true, force: true }),
    sibling: async (store) => sqlite(store.path),
    sealsEffects: true,
  },
  { suites: ALL_STORE_SUITES },
);

describeCheckpointStoreConformance({
  name: 'sqlite, encrypted',
  create: async () => sqlite(join(mkdtempSync(join(tmpdir(), 'countersign-enc-cp-')), 'store.db')),
  destroy: async (store) => rmSync(dirname(store.path), { recursive: true, force: true }),
  audit: (store) => store.listAudit(),
  sealsEffects: true,
});

// The file checkpoint store: checkpoint bodies, port payloads, decisions and app state sealed
// in the files, its data keys in DIR/keys/; a sibling is a second process on the directory.
function files(dir: string): FileCheckpointStore {
  const e = encryption();
  return e.wrapRuns(createFileCheckpointStore({ dir, durable: false, codec: e.codec }));
}

describeCheckpointStoreConformance(
  {
    name: 'file, encrypted',
    create: async () => files(mkdtempSync(join(tmpdir(), 'countersign-enc-files-'))),
    destroy: async (store) => rmSync(store.dir, { recursive: true, force: true }),
  },
  // No skip: the file store searches rows it has read and opened, so the sealed preview matches.
);

describe('DataKeys conformance: file', () => {
  let dir = '';
  let current: FileCheckpointStore | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'countersign-file-keys-'));
    current = files(dir);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  dataKeyCases({
    store: () => current as FileCheckpointStore,
    sibling: async () => files(dir),
  });
});

// The memory store keeps values, not text (nothing reaches a disk); wrapped, it must behave the same.
describeStoreConformance(
  { name: 'memory, with a keyring', create: async () => encryption().wrap(createMemoryStore()) },
  { suites: ALL_STORE_SUITES },
);

describe.skipIf(pg === null)('PostgreSQL, encrypted', () => {
  const connectionString = pg ?? TEST_PG_URL;
  async function postgres(schema: string) {
    const e = encryption();
    return e.wrap(await createPostgresStore({ connectionString, schema, codec: e.codec }));
  }
  // The suites whose rows carry payloads; leases, stalled sessions and rules hold none
  // (they run unencrypted in postgres-store.test.ts), which keeps CI time in check.
  describeStoreConformance(
    {
      name: 'postgres, encrypted',
      create: () => postgres(freshSchema('enc')),
      destroy: (store) => dropSchema(store.schema),
      sibling: (store) => postgres(store.schema),
      sealsEffects: true,
    },
    {
      suites: [
        'sessions',
        'approvals',
        'paging',
        'ledger',
        'audit',
        'state',
        'transfer',
        'deliveries',
        'dataKeys',
      ],
    },
  );
  describeCheckpointStoreConformance({
    name: 'postgres, encrypted',
    create: () => postgres(freshSchema('enc_cp')),
    destroy: (store) => dropSchema(store.schema),
    audit: (store) => store.listAudit(),
    sealsEffects: true,
  });
});
