import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl, TEST_PG_URL } from '../helpers/postgres.ts';
import { startScriptedOpenAIServer } from '../helpers/scripted-openai-server.ts';

type Turn = { session: string; status: string; reply: string | null; approvals: Array<{ id: string }> };
type ErrorOut = { error: { code: string; message: string } };

const pg = await postgresForTests();
const newKey = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;

/**
 * What the customer said, what the model proposed, what the person was shown and what the
 * tool returned, in the words the seed scenario uses: none of it may be found in the bytes
 * of the store. (Ids, statuses, timestamps, hashes and the principal stay clear.)
 */
const CUSTOMER_STRINGS = [
  'Please cancel my order 1044', // the customer's message
  '"orderId":1044', // the call's arguments, as stored JSON
  'Cancel order 1044 for customer', // the effect text the person approved
  'Crème Brûlée at Home', // an item named in the effect and the tool's result
  'has been cancelled', // the tool's result
  'Cancelled order 1044', // the model's reply
  'Damaged cover reported by customer', // a workflow's port payload and checkpoint state
];

function found(bytes: Buffer): string[] {
  return CUSTOMER_STRINGS.filter((text) => bytes.includes(Buffer.from(text, 'utf8')));
}

/** The bytes of every file under `dir`, end to end. */
function filesUnder(dir: string): Buffer {
  const entries = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) =>
    entry.isFile(),
  );
  return Buffer.concat(entries.map((entry) => readFileSync(join(entry.parentPath, entry.name))));
}

async function ok(args: string[], env: Record<string, string>) {
  const run = await runCli([...args, '--json'], env);
  expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(0);
  return run.json;
}

/** The seed scenario: a customer asks, a person approves in another process, the call runs; and a refund workflow. */
async function seedScenario(env: Record<string, string>) {
  const turn = (await ok(
    ['chat', '--as', 'backend', 'seed-1', 'Please cancel my order 1044.', '--user', 'c-100'],
    env,
  )) as Turn;
  expect(turn.status).toBe('awaiting_approval');
  const done = (await ok(['approve', turn.approvals[0]!.id, '--as', 'alice'], env)) as Turn;
  expect(done.reply).toContain('1044');
  const run = (await ok(
    ['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'refund-1040'],
    env,
  )) as {
    requests: Array<{ id: string }>;
  };
  expect(run.requests).toHaveLength(1);
}

describe('encryption at rest, end to end through the CLI', () => {
  let server: Awaited<ReturnType<typeof startScriptedOpenAIServer>>;
  beforeAll(async () => {
    server = await startScriptedOpenAIServer();
  });
  const schema = freshSchema('crypt');
  afterAll(async () => {
    await server.close();
    if (pg !== null) await dropSchema(schema);
  });
  const envFor = (store: string, keys: string) => ({
    COUNTERSIGN_STORE: store,
    COUNTERSIGN_MODEL: 'openai-compatible:scripted',
    OPENAI_BASE_URL: server.url,
    COUNTERSIGN_ENCRYPTION_KEYS: keys,
  });

  it('SQLite: the file and its WAL hold none of the customer’s words; rotate, then old rows read; a wrong key is CONFIG_ERROR', async () => {
    const store = tempStore();
    const path = store.slice('sqlite:'.length);
    const k1 = newKey('k1');
    const env = envFor(store, k1);
    // Kept open so the last CLI process does not fold the WAL away: its bytes are checked too.
    await ok(['pending'], env);
    const holder = new DatabaseSync(path);
    holder.prepare('SELECT count(*) FROM sessions').get();
    try {
      await seedScenario(env);
      const wal = `${path}-wal`;
      expect(existsSync(wal)).toBe(true);
      expect(readFileSync(wal).length).toBeGreaterThan(0);
      expect(found(readFileSync(path))).toEqual([]);
      expect(found(readFileSync(wal))).toEqual([]);
      // The same scenario without keys does write them: the search would find them.
      const plain = tempStore();
      await seedScenario({ ...envFor(plain, k1), COUNTERSIGN_ENCRYPTION_KEYS: '' });
      const plainPath = plain.slice('sqlite:'.length);
      const plainBytes = Buffer.concat([
        readFileSync(plainPath),
        existsSync(`${plainPath}-wal`) ? readFileSync(`${plainPath}-wal`) : Buffer.alloc(0),
      ]);
      expect(found(plainBytes)).toEqual(CUSTOMER_STRINGS);
      // Clear on purpose: ids, statuses and the principal, so queries and compare-and-sets work.
      const row = holder
        .prepare(
          "SELECT status, customer, substr(effect, 1, 5) AS effect FROM approvals WHERE kind = 'tool-call'",
        )
        .get();
      expect(row).toEqual({ status: 'approved', customer: 'c-100', effect: 'cs1t:' });
    } finally {
      holder.close();
    }

    const k2 = newKey('k2');
    const rotated = (await ok(['keys', 'rotate'], {
      ...env,
      COUNTERSIGN_ENCRYPTION_KEYS: `${k2},${k1}`,
    })) as {
      rewrapped: number;
    };
    expect(rotated.rewrapped).toBeGreaterThanOrEqual(2);
    const onlyK2 = { ...env, COUNTERSIGN_ENCRYPTION_KEYS: k2 };
    const executions = (await ok(['executions'], onlyK2)) as Array<{ args: unknown; result: unknown }>;
    expect(executions[0]).toMatchObject({ args: { orderId: 1044 }, status: 'succeeded' });
    const audit = await runCli(['audit', '--verify'], onlyK2);
    expect(audit.code, audit.stdout + audit.stderr).toBe(0);

    const wrong = await runCli(['executions', '--json'], {
      ...env,
      COUNTERSIGN_ENCRYPTION_KEYS: newKey('k2'),
    });
    expect(wrong.code).not.toBe(0);
    expect((wrong.json as ErrorOut).error).toMatchObject({
      code: 'CONFIG_ERROR',
      message: expect.stringContaining('"k2"'),
    });
    const old = await runCli(['executions', '--json'], { ...env, COUNTERSIGN_ENCRYPTION_KEYS: k1 });
    expect((old.json as ErrorOut).error).toMatchObject({
      code: 'CONFIG_ERROR',
      message: expect.stringContaining('"k2"'),
    });
    const none = await runCli(['executions', '--json'], { ...env, COUNTERSIGN_ENCRYPTION_KEYS: '' });
    expect((none.json as ErrorOut).error.code).toBe('CONFIG_ERROR');
  });

  it('an export of an encrypted store is encrypted; a store with the key imports it; --decrypt writes plain JSON', async () => {
    const k1 = newKey('k1');
    const env = envFor(tempStore(), k1);
    await seedScenario(env);
    const dir = mkdtempSync(join(tmpdir(), 'countersign-export-'));
    const sealedFile = join(dir, 'seed-1.json');
    const exported = (await ok(['session', 'export', 'seed-1', '--out', sealedFile], env)) as {
      encryptedWith: string;
    };
    expect(exported.encryptedWith).toBe('k1');
    const sealedBytes = readFileSync(sealedFile);
    expect(JSON.parse(sealedBytes.toString('utf8'))).toMatchObject({
      format: 'countersign.sealed-export',
      kekId: 'k1',
    });
    expect(found(sealedBytes)).toEqual([]);

    const other = envFor(tempStore(), `${newKey('k2')},${k1}`);
    const imported = (await ok(
      ['session', 'import', sealedFile, '--as', 'bob', '--trust-unsigned'],
      other,
    )) as {
      session: string;
    };
    expect(imported.session).toBe('seed-1');
    const executions = (await ok(['executions'], other)) as unknown[];
    expect(executions).toEqual([]); // unsigned: the ledger rows stay behind, as for a plain export
    const messages = await runCli(['session', 'export', 'seed-1', '--decrypt'], other);
    expect(messages.stdout).toContain('Please cancel my order 1044.');

    const noKeys = await runCli(
      ['session', 'import', sealedFile, '--as', 'bob', '--trust-unsigned', '--json'],
      {
        ...envFor(tempStore(), ''),
      },
    );
    expect((noKeys.json as ErrorOut).error).toMatchObject({
      code: 'CONFIG_ERROR',
      message: expect.stringContaining('"k1"'),
    });
    const wrongKey = await runCli(
      ['session', 'import', sealedFile, '--as', 'bob', '--trust-unsigned', '--json'],
      {
        ...envFor(tempStore(), newKey('k1')),
      },
    );
    expect((wrongKey.json as ErrorOut).error).toMatchObject({
      code: 'CONFIG_ERROR',
      message: expect.stringContaining('"k1"'),
    });

    const plainFile = join(dir, 'plain.json');
    await ok(['session', 'export', 'seed-1', '--out', plainFile, '--decrypt'], env);
    expect(found(readFileSync(plainFile))).toEqual(expect.arrayContaining(['Please cancel my order 1044']));
    const refused = await runCli(['session', 'export', 'seed-1', '--decrypt', '--json'], {
      ...env,
      COUNTERSIGN_ENCRYPTION_KEYS: '',
    });
    expect((refused.json as ErrorOut).error.code).toBe('CONFIG_ERROR');
  });

  it('a file: store: no file under DIR holds the workflow’s words; rotate, then read; a wrong key is CONFIG_ERROR; erase forgets the key', async () => {
    const k1 = newKey('k1');
    const dir = mkdtempSync(join(tmpdir(), 'countersign-files-'));
    const env = { COUNTERSIGN_STORE: `file:${dir}`, COUNTERSIGN_ENCRYPTION_KEYS: k1 };
    const refund = async (to: Record<string, string>, run: string, user: string) => {
      const started = (await ok(
        ['run', 'start', '--as', 'backend', 'refund', '1040', '--run', run, '--user', user],
        to,
      )) as { requests: Array<{ id: string }> };
      expect(started.requests).toHaveLength(1);
      await ok(
        [
          'answer',
          started.requests[0]!.id,
          '{"approved": true, "note": "Refund approved, cover photo on file"}',
          '--as',
          'mia',
        ],
        to,
      );
    };
    await refund(env, 'refund-1040', 'c-100');
    await refund(env, 'refund-1041', 'c-200');
    const bytes = filesUnder(dir);
    expect(bytes.length).toBeGreaterThan(0);
    expect(found(bytes)).toEqual([]);
    expect(bytes.includes(Buffer.from('cover photo on file'))).toBe(false); // the person's answer
    // The same workflow without keys writes the words in clear: the search would find them.
    const plainDir = mkdtempSync(join(tmpdir(), 'countersign-files-plain-'));
    await refund({ COUNTERSIGN_STORE: `file:${plainDir}` }, 'refund-1040', 'c-100');
    expect(found(filesUnder(plainDir))).toContain('Damaged cover reported by customer');
    expect(filesUnder(plainDir).includes(Buffer.from('cover photo on file'))).toBe(true);

    // `run history` opens every checkpoint file of the run (their bodies are sealed).
    const history = (await ok(['run', 'history', 'refund-1040'], env)) as unknown[];
    expect(history).toHaveLength(3);
    const k2 = newKey('k2');
    const rotated = (await ok(['keys', 'rotate'], {
      ...env,
      COUNTERSIGN_ENCRYPTION_KEYS: `${k2},${k1}`,
    })) as {
      rewrapped: number;
      total: number;
    };
    expect(rotated.rewrapped).toBeGreaterThanOrEqual(2);
    expect(rotated.rewrapped).toBe(rotated.total);
    const onlyK2 = { ...env, COUNTERSIGN_ENCRYPTION_KEYS: k2 };
    const runs = (await ok(['runs'], onlyK2)) as Array<{ run: string }>;
    expect(runs.map((run) => run.run).sort()).toEqual(['refund-1040', 'refund-1041']);
    expect(await ok(['run', 'history', 'refund-1040'], onlyK2)).toEqual(history);

    const wrong = await runCli(['run', 'history', 'refund-1040', '--json'], {
      ...env,
      COUNTERSIGN_ENCRYPTION_KEYS: newKey('k2'),
    });
    expect(wrong.code).not.toBe(0);
    expect((wrong.json as ErrorOut).error).toMatchObject({
      code: 'CONFIG_ERROR',
      message: expect.stringContaining('"k2"'),
    });
    const none = await runCli(['run', 'history', 'refund-1040', '--json'], {
      ...env,
      COUNTERSIGN_ENCRYPTION_KEYS: '',
    });
    expect((none.json as ErrorOut).error.code).toBe('CONFIG_ERROR');

    const erased = (await ok(['erase', '--principal', 'c-100', '--as', 'dpo'], onlyK2)) as {
      keyForgotten: boolean;
    };
    expect(erased.keyForgotten).toBe(true);
    // No file under keys/ holds c-100's wrapped key any more; c-200's run still reads.
    const keyFiles = readdirSync(join(dir, 'keys'), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map(
        (entry) =>
          JSON.parse(readFileSync(join(entry.parentPath, entry.name), 'utf8')) as Record<string, unknown>,
      )
      .filter((record) => record.owner === 'principal:c-100');
    expect(keyFiles.length).toBeGreaterThan(0);
    expect(keyFiles.every((record) => record.wrapped === null)).toBe(true);
    expect(await ok(['run', 'history', 'refund-1041'], onlyK2)).toHaveLength(3);
  });

  describe.skipIf(pg === null)('PostgreSQL', () => {
    it('a pg_dump of the schema holds none of the customer’s words', async () => {
      const env = envFor(storeUrl(schema), newKey('k1'));
      await seedScenario(env);
      const dump = execFileSync('pg_dump', ['--schema', schema, TEST_PG_URL], {
        maxBuffer: 64 * 1024 * 1024,
      });
      expect(dump.includes(Buffer.from('data_keys'))).toBe(true);
      expect(found(dump)).toEqual([]);
    });
  });
});
