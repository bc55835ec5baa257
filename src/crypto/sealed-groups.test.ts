import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchema, postgresForTests, storeUrl } from '../../test/helpers/postgres.ts';
import type { Message } from '../core/messages.ts';
import { openStore } from '../store/open-store.ts';
import type { Store } from '../store/store.ts';
import { keyringOf } from './encrypted-store.ts';
import { isErased } from './erased.ts';

/**
 * The messages one step appends are sealed as one group (codec.ts encodeGroup): one cipher per
 * step. These tests attack the format on the real files and schemas: a moved, cut or edited
 * group is damage (CORRUPT_DATA), never a guess; an erased key erases every member; a store
 * opened without keys says which key it needs; rows sealed one by one before still read.
 */
const pg = await postgresForTests();
const keys = `k1:${randomBytes(32).toString('base64')}`;
const env = { COUNTERSIGN_ENCRYPTION_KEYS: keys };
const at = '2026-12-01T10:00:00.000Z';
const step: Message[] = [
  {
    role: 'assistant',
    text: 'Cancelling order 1044 for you.',
    calls: [{ id: 'c1', name: 'cancel', args: { order: 1044 } }],
  },
  { role: 'tool', results: [{ callId: 'c1', name: 'cancel', output: { cancelled: 1044 }, isError: false }] },
  { role: 'assistant', text: 'Order 1044 is cancelled.' },
] as Message[];

async function commit(store: Store, session: string, append: Message[], expected = 0) {
  await store.commitStep({ session, leaseOwner: 'me', expectedMessageCount: expected, at, append });
}

async function seeded(store: Store, session: string) {
  await store.ensureSession({ id: session, agent: 'a', principal: 'cust-1', at });
  await store.acquireLease({ session, owner: 'me', untilMs: Date.now() + 60_000, nowMs: Date.now() });
  await commit(store, session, step);
}

interface Backend {
  name: string;
  url: () => string;
  /** Runs raw SQL on the store's tables (the attacker with write access). */
  sql: (statement: string) => Promise<Array<Record<string, unknown>>>;
  cleanup?: () => Promise<void>;
}

function sqliteBackend(): Backend {
  const path = join(mkdtempSync(join(tmpdir(), 'cs-groups-')), 's.db');
  return {
    name: 'SQLite',
    url: () => `sqlite:${path}`,
    async sql(statement) {
      const db = new DatabaseSync(path);
      try {
        if (statement.trimStart().toUpperCase().startsWith('SELECT'))
          return db.prepare(statement).all() as Array<Record<string, unknown>>;
        db.exec(statement);
        return [];
      } finally {
        db.close();
      }
    },
  };
}

async function postgresBackend(): Promise<Backend> {
  const { default: pgModule } = await import('pg');
  const schema = freshSchema('groups');
  const client = new pgModule.Client({ connectionString: pg ?? '' });
  await client.connect();
  await client.query(`SET search_path TO "${schema}"`).catch(() => undefined);
  return {
    name: 'PostgreSQL',
    url: () => storeUrl(schema),
    async sql(statement) {
      await client.query(`SET search_path TO "${schema}"`);
      return (await client.query(statement)).rows;
    },
    async cleanup() {
      await client.end();
      await dropSchema(schema);
    },
  };
}

const backends: Array<() => Promise<Backend>> = [async () => sqliteBackend()];
if (pg !== null) backends.push(postgresBackend);
const opened: Backend[] = [];
afterAll(async () => {
  for (const backend of opened) await backend.cleanup?.();
});

describe.each(backends.map((make, i) => [i === 0 ? 'SQLite' : 'PostgreSQL', make] as const))(
  'sealed message groups on %s',
  (_name, make) => {
    async function fresh() {
      const backend = await make();
      opened.push(backend);
      const store = await openStore(backend.url(), { env });
      return { backend, store };
    }

    it('one step is one sealed head and references; it reads back whole, in a new store too', async () => {
      const { backend, store } = await fresh();
      await seeded(store, 's1');
      const rows = await backend.sql(`SELECT seq, body FROM messages WHERE session = 's1' ORDER BY seq`);
      expect(String(rows[0]?.body)).toMatch(/^cs1g:dk_[0-9a-f]+:3:/);
      expect(rows.slice(1).map((row) => row.body)).toEqual(['cs1g+1', 'cs1g+2']);
      expect(rows.map((row) => String(row.body)).join(' ')).not.toContain('1044');
      await store.close();
      const again = await openStore(backend.url(), { env });
      expect((await again.loadMessages('s1')).map((stored) => stored.message)).toEqual(step);
      await again.close();
    });

    it('a group moved to another session or position, cut short or edited is CORRUPT_DATA', async () => {
      const { backend, store } = await fresh();
      await seeded(store, 's1');
      await seeded(store, 's2');
      await store.close();
      const head = String(
        (await backend.sql(`SELECT body FROM messages WHERE session = 's1' AND seq = 0`))[0]?.body,
      );
      // s2's group replaced by s1's: the tag binds the session and the first seq.
      await backend.sql(`UPDATE messages SET body = '${head}' WHERE session = 's2' AND seq = 0`);
      // s1 loses a member.
      await backend.sql(`DELETE FROM messages WHERE session = 's1' AND seq = 2`);
      const again = await openStore(backend.url(), { env });
      await expect(again.loadMessages('s2')).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
      await expect(again.loadMessages('s1')).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
      await again.close();
    });

    it('a member edited or a member without its head is CORRUPT_DATA, never a guess', async () => {
      const { backend, store } = await fresh();
      await seeded(store, 's1');
      await seeded(store, 's2');
      await store.close();
      await backend.sql(`UPDATE messages SET body = 'cs1g+2' WHERE session = 's1' AND seq = 1`);
      await backend.sql(`DELETE FROM messages WHERE session = 's2' AND seq = 0`);
      const again = await openStore(backend.url(), { env });
      await expect(again.loadMessages('s1')).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
      await expect(again.loadMessages('s2')).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
      await again.close();
    });

    it('the customer’s key forgotten: every member reads as erased', async () => {
      const { store } = await fresh();
      await seeded(store, 's1');
      expect(await keyringOf(store)?.forget('cust-1')).toBe(true);
      const messages = await store.loadMessages('s1');
      expect(messages).toHaveLength(3);
      expect(messages.every((stored) => isErased(stored.message))).toBe(true);
      await store.close();
    });

    it('opened without keys: CONFIG_ERROR naming the data key, nothing changed', async () => {
      const { backend, store } = await fresh();
      await seeded(store, 's1');
      await store.close();
      const plain = await openStore(backend.url(), { env: {} });
      const error = await plain.loadMessages('s1').catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: 'CONFIG_ERROR' });
      expect(String((error as Error).message)).toMatch(/data key dk_[0-9a-f]+/);
      await plain.close();
    });

    it('rows written one by one (before groups, or by an import) read beside groups', async () => {
      const { store } = await fresh();
      await seeded(store, 's1');
      const single: Message = { role: 'user', text: 'any update?' };
      await commit(store, 's1', [single], 3);
      await commit(store, 's1', step, 4);
      const exported = await store.exportSession('s1');
      expect(exported?.messages.map((stored) => stored.message)).toEqual([...step, single, ...step]);
      await store.close();
    });
  },
);
