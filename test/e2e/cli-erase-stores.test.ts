import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';
import {
  dropSchema,
  freshSchema,
  postgresForTests,
  storeUrl,
  TEST_PG_URL,
  withAdmin,
} from '../helpers/postgres.ts';

/**
 * `countersign erase` on both SQL backends, with encryption at rest off and on: after the
 * seed scenario (a request approved and run, a refund run waiting, another customer's
 * session), erasing c-100 leaves nothing of theirs readable, destroys their data key when
 * encryption is on, and `audit --verify` passes with their entries shown as erased.
 */
const pg = await postgresForTests();
const newKey = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;

/** c-100's words, as the seed scenario writes them (message, arguments, effect, result, reply, port data). */
const THEIRS = [
  'Please cancel my order 1044',
  'Cancel order 1044 for customer',
  'has been cancelled',
  'Cancelled order 1044',
];

async function ok(args: string[], env: Record<string, string>) {
  const run = await runCli([...args, '--json'], env);
  expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(0);
  return run.json as Record<string, unknown>;
}

async function seedThenErase(env: Record<string, string>) {
  const turn = (await ok(
    ['chat', '--as', 'backend', 'seed-1', 'Please cancel my order 1044.', '--user', 'c-100'],
    env,
  )) as {
    approvals: Array<{ id: string }>;
  };
  await ok(['approve', turn.approvals[0]!.id, '--as', 'alice'], env);
  const run = (await ok(
    ['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'refund-1040', '--user', 'c-100'],
    env,
  )) as {
    requests: Array<{ id: string }>;
  };
  await ok(
    ['chat', '--as', 'backend', 'other-1', "What's the status of order 1045?", '--user', 'c-200'],
    env,
  );

  const report = await ok(['erase', '--principal', 'c-100', '--as', 'dpo'], env);
  expect(report).toMatchObject({ erased: true, expired: [run.requests[0]!.id] });
  expect(report.counts).toMatchObject({ sessions: 1, runs: 1, executions: 1 });
  const verify = await ok(['audit', '--verify'], env);
  expect(verify).toMatchObject({ ok: true });
  expect(verify.erased).toBe((report.counts as { auditEntries: number }).auditEntries);
  const trail = JSON.stringify(await ok(['audit'], env));
  for (const text of THEIRS) expect(trail).not.toContain(text);
  expect(trail).toContain('"principal.erased"');
  // The other customer's session is still there and readable.
  expect((await runCli(['resume', 'other-1', '--json'], env)).code).toBe(0);
  return report;
}

describe('countersign erase on both SQL backends', () => {
  it('SQLite with encryption on: the data key is destroyed, the file holds nothing of theirs', async () => {
    const store = tempStore();
    const env = { COUNTERSIGN_STORE: store, COUNTERSIGN_ENCRYPTION_KEYS: newKey('k1') };
    const report = await seedThenErase(env);
    expect(report.keyForgotten).toBe(true);
    const db = new DatabaseSync(store.slice('sqlite:'.length));
    try {
      const keys = db.prepare("SELECT wrapped FROM data_keys WHERE owner = 'principal:c-100'").all();
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) expect(key.wrapped).toBeNull();
    } finally {
      db.close();
    }
    // Erasing again: nothing is left, and the key is already gone.
    expect(await ok(['erase', '--principal', 'c-100'], env)).toMatchObject({
      erased: false,
      keyForgotten: false,
    });
  });

  it('SQLite with encryption off: the file and its WAL hold none of their words afterwards', async () => {
    const store = tempStore();
    const report = await seedThenErase({ COUNTERSIGN_STORE: store });
    expect(report.keyForgotten).toBe(false);
    // The request was decided (its row rewritten) before the erasure: the old version of the
    // row must not survive in the page's free space (secure_delete FAST from open).
    const path = store.slice('sqlite:'.length);
    const bytes = Buffer.concat([
      readFileSync(path),
      existsSync(`${path}-wal`) ? readFileSync(`${path}-wal`) : Buffer.alloc(0),
    ]);
    for (const text of THEIRS) expect(bytes.includes(text), text).toBe(false);
  });

  describe.skipIf(pg === null)('PostgreSQL', () => {
    const schemas = [freshSchema('erase_plain'), freshSchema('erase_crypt')];
    afterAll(async () => {
      for (const schema of schemas) await dropSchema(schema);
    });

    it('encryption off: a pg_dump afterwards holds none of their words', async () => {
      const env = { COUNTERSIGN_STORE: storeUrl(schemas[0]!) };
      await seedThenErase(env);
      const dump = execFileSync('pg_dump', ['--schema', schemas[0]!, TEST_PG_URL], {
        maxBuffer: 64 * 1024 * 1024,
      });
      for (const text of THEIRS) expect(dump.includes(Buffer.from(text)), text).toBe(false);
      expect(dump.includes(Buffer.from('status of order 1045'))).toBe(true);
    });

    it('erase racing approve, in two processes: the call runs only if the approval won, and nothing is left', async () => {
      for (let round = 0; round < 3; round++) {
        const schema = freshSchema(`erase_race_${round}`);
        schemas.push(schema);
        const env = { COUNTERSIGN_STORE: storeUrl(schema) };
        const turn = (await ok(
          ['chat', '--as', 'backend', 's1', 'Please cancel my order 1044.', '--user', 'c-100'],
          env,
        )) as {
          approvals: Array<{ id: string }>;
        };
        const id = turn.approvals[0]!.id;
        const [approve, erase] = await Promise.all([
          runCli(['approve', id, '--as', 'alice', '--json'], env),
          runCli(['erase', '--principal', 'c-100', '--as', 'dpo', '--json'], env),
        ]);
        expect(erase.code, erase.stderr).toBe(0);
        const report = erase.json as { expired: string[]; decidedFirst: string[] };
        // Expired by the erasure (then no approval can win), decided while it ran, or decided
        // before it began (then it was no longer pending to list).
        expect([...report.expired, ...report.decidedFirst].filter((other) => other !== id)).toEqual([]);
        if (report.expired.includes(id)) {
          expect(approve.code).not.toBe(0);
          expect((approve.json as { error: { code: string } }).error.code).toMatch(
            /^(EXPIRED|NOT_FOUND|ALREADY_DECIDED)$/,
          );
        }
        expect((await ok(['audit', '--verify'], env)).ok).toBe(true);
        // Nothing of theirs left: no session, no request, no ledger row.
        expect(await ok(['pending'], env)).toEqual([]);
        expect(await ok(['executions'], env)).toEqual([]);
      }
    });

    it('encryption on: the data key is destroyed', async () => {
      const env = { COUNTERSIGN_STORE: storeUrl(schemas[1]!), COUNTERSIGN_ENCRYPTION_KEYS: newKey('k1') };
      const report = await seedThenErase(env);
      expect(report.keyForgotten).toBe(true);
    });
  });
});

/**
 * A run started for c-100 that raised no request (the order does not exist: it fails in its
 * first executor) names c-100 only in its origin, inside the sealed checkpoint body. Erasure
 * finds it by the run's clear customer, on each backend, with encryption on.
 */
describe('countersign erase finds a run by its customer, not only by its requests', () => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(schema);
  });

  async function eraseRequestlessRun(env: Record<string, string>, audited: boolean) {
    const failed = await runCli(
      [
        'run',
        'start',
        '--as',
        'backend',
        'refund',
        '9999',
        '--run',
        'refund-9999',
        '--user',
        'c-100',
        '--json',
      ],
      env,
    );
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.json).toMatchObject({ run: 'refund-9999', status: 'failed', requests: [] });
    await ok(
      ['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'refund-1040', '--user', 'c-200'],
      env,
    );
    expect(await ok(['pending', '--customer', 'c-100'], env)).toEqual([]);
    expect(await ok(['runs', '--customer', 'c-100'], env)).toEqual([
      expect.objectContaining({ run: 'refund-9999', customer: 'c-100', status: 'failed' }),
    ]);

    const report = await ok(['erase', '--principal', 'c-100', '--as', 'dpo'], env);
    expect(report).toMatchObject({ erased: true, counts: { runs: 1, requests: 0 } });
    expect((report.counts as { checkpoints: number }).checkpoints).toBeGreaterThan(0);
    expect(await ok(['runs', '--customer', 'c-100'], env)).toEqual([]);
    const history = await runCli(['run', 'history', 'refund-9999', '--json'], env);
    expect((history.json as { error: { code: string } }).error.code).toBe('NOT_FOUND');
    // The other customer's run is there, and still reads.
    expect(await ok(['runs'], env)).toEqual([
      expect.objectContaining({ run: 'refund-1040', customer: 'c-200' }),
    ]);
    expect(await ok(['run', 'history', 'refund-1040'], env)).not.toEqual([]);
    if (audited) {
      const verify = await ok(['audit', '--verify'], env);
      expect(verify).toMatchObject({ ok: true });
      expect(JSON.stringify(await ok(['audit'], env))).toContain('"principal.erased"');
    }
    expect(await ok(['erase', '--principal', 'c-100'], env)).toMatchObject({ erased: false });
  }

  it('SQLite, encryption on', async () => {
    const store = tempStore();
    await eraseRequestlessRun({ COUNTERSIGN_STORE: store, COUNTERSIGN_ENCRYPTION_KEYS: newKey('k1') }, true);
    const db = new DatabaseSync(store.slice('sqlite:'.length));
    try {
      expect(db.prepare("SELECT id FROM workflow_runs WHERE customer = 'c-100'").all()).toEqual([]);
      expect(db.prepare("SELECT id FROM workflow_checkpoints WHERE run = 'refund-9999'").all()).toEqual([]);
      // The run's own data key (its checkpoints were sealed with it) is destroyed too, so no
      // copy the delete left behind can be read; the other customer's run keeps its key.
      const runKeys = (owner: string) =>
        db.prepare('SELECT wrapped FROM data_keys WHERE owner = ?').all(owner) as Array<{ wrapped: unknown }>;
      expect(runKeys('run:refund-9999').length).toBeGreaterThan(0);
      expect(runKeys('run:refund-9999').every((key) => key.wrapped === null)).toBe(true);
      expect(runKeys('run:refund-1040').some((key) => key.wrapped !== null)).toBe(true);
    } finally {
      db.close();
    }
  });

  it("the file store, encryption on: the run, its index entries and the customer's name in the index go", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-erase-files-'));
    await eraseRequestlessRun(
      { COUNTERSIGN_STORE: `file:${dir}`, COUNTERSIGN_ENCRYPTION_KEYS: newKey('k1') },
      false,
    );
    expect(existsSync(join(dir, 'runs', 'refund-9999'))).toBe(false);
    expect(readdirSync(join(dir, 'run-index', 'customer'))).toEqual(['c-200']);
  });

  describe.skipIf(pg === null)('PostgreSQL', () => {
    it('encryption on', async () => {
      const schema = freshSchema('erase_run_customer');
      schemas.push(schema);
      await eraseRequestlessRun(
        { COUNTERSIGN_STORE: storeUrl(schema), COUNTERSIGN_ENCRYPTION_KEYS: newKey('k1') },
        true,
      );
      const keys = await withAdmin(
        async (client) =>
          (await client.query(`SELECT owner, wrapped FROM "${schema}".data_keys WHERE owner LIKE 'run:%'`))
            .rows,
      );
      expect(keys.filter((key) => key.owner === 'run:refund-9999').every((key) => key.wrapped === null)).toBe(
        true,
      );
      expect(keys.some((key) => key.owner === 'run:refund-1040' && key.wrapped !== null)).toBe(true);
    });
  });
});
