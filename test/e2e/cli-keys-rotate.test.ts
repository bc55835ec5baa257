import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempStore } from '../helpers/cli.ts';
import { dropSchema, freshSchema, postgresForTests, storeUrl, withAdmin } from '../helpers/postgres.ts';

/**
 * `countersign keys rotate` leaves a `keys.rotated` entry: who, when, how many keys were
 * re-wrapped, the new KEK id and the old ones, and no key material; the chain still verifies.
 */
const pg = await postgresForTests();
const secret = () => randomBytes(32).toString('base64');

async function ok(args: string[], env: Record<string, string>) {
  const run = await runCli([...args, '--json'], env);
  expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(0);
  return run.json as Record<string, unknown>;
}

type Entry = { kind: string; actor: string; at: string; data: Record<string, unknown> };

/** Seeds data keys under k1, rotates to k2 twice; returns the trail's text to look for key material in. */
async function rotateAndAudit(store: string): Promise<{ trail: string; k1: string; k2: string }> {
  const [k1, k2] = [secret(), secret()];
  const before = { COUNTERSIGN_STORE: store, COUNTERSIGN_ENCRYPTION_KEYS: `k1:${k1}` };
  await ok(['chat', '--as', 'backend', 's1', 'Please cancel my order 1044.', '--user', 'c-100'], before);
  const both = { ...before, COUNTERSIGN_ENCRYPTION_KEYS: `k2:${k2},k1:${k1}` };
  const first = await ok(['keys', 'rotate', '--as', 'dana'], both);
  expect(first).toMatchObject({ kekId: 'k2', from: ['k1'], by: 'dana', audited: true });
  expect(first.rewrapped).toBeGreaterThanOrEqual(1);
  expect(first.rewrapped).toBe(first.total);
  const again = await ok(['keys', 'rotate', '--as', 'dana'], both);
  // Nothing left to re-wrap; the first entry may have made the store's own key (under k2 already).
  expect(again).toMatchObject({ kekId: 'k2', rewrapped: 0, from: [] });
  expect(again.total).toBeGreaterThanOrEqual(first.total as number);

  const after = { ...before, COUNTERSIGN_ENCRYPTION_KEYS: `k2:${k2}` };
  const entries = (await ok(['audit'], after)) as unknown as Entry[];
  const rotations = entries.filter((entry) => entry.kind === 'keys.rotated');
  expect(rotations).toEqual([
    {
      ...rotations[0],
      actor: 'dana',
      at: first.at,
      data: { kekId: 'k2', rewrapped: first.rewrapped, total: first.total, from: ['k1'] },
    },
    {
      ...rotations[1],
      actor: 'dana',
      at: again.at,
      data: { kekId: 'k2', rewrapped: 0, total: again.total, from: [] },
    },
  ]);
  expect(await ok(['audit', '--verify'], after)).toMatchObject({ ok: true });
  return { trail: JSON.stringify(entries), k1, k2 };
}

describe('countersign keys rotate is audited', () => {
  it('SQLite: a keys.rotated entry per rotation, no key material in it, and audit --verify passes', async () => {
    const store = tempStore();
    const { trail, k1, k2 } = await rotateAndAudit(store);
    const db = new DatabaseSync(store.slice('sqlite:'.length));
    try {
      const wrapped = db.prepare('SELECT wrapped FROM data_keys').all();
      for (const row of wrapped) expect(trail).not.toContain(String(row.wrapped));
      // The entry's own data as stored: ids and counts, nothing else.
      const stored = db.prepare("SELECT data FROM audit WHERE kind = 'keys.rotated'").all();
      expect(stored).toHaveLength(2);
    } finally {
      db.close();
    }
    for (const key of [k1, k2]) expect(trail).not.toContain(key);
  });

  it('a file: store keeps no audit trail: the rotation says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-rotate-files-'));
    const k1 = secret();
    const env = { COUNTERSIGN_STORE: `file:${dir}`, COUNTERSIGN_ENCRYPTION_KEYS: `k1:${k1}` };
    await ok(
      ['run', 'start', '--as', 'backend', 'refund', '1040', '--run', 'refund-1040', '--user', 'c-100'],
      env,
    );
    const both = { ...env, COUNTERSIGN_ENCRYPTION_KEYS: `k2:${secret()},k1:${k1}` };
    expect(await ok(['keys', 'rotate', '--as', 'dana'], both)).toMatchObject({ kekId: 'k2', audited: false });
    const text = await runCli(['keys', 'rotate', '--as', 'dana'], both);
    expect(text.stdout).toContain(
      'A file: store keeps no audit trail: this rotation is recorded nowhere else.',
    );
  });

  describe.skipIf(pg === null)('PostgreSQL', () => {
    const schema = freshSchema('rotate_audit');
    afterAll(() => dropSchema(schema));

    it('a keys.rotated entry per rotation, no key material in it, and audit --verify passes', async () => {
      const { trail, k1, k2 } = await rotateAndAudit(storeUrl(schema));
      const wrapped = await withAdmin((client) => client.query(`SELECT wrapped FROM "${schema}".data_keys`));
      for (const row of wrapped.rows as Array<{ wrapped: string }>) expect(trail).not.toContain(row.wrapped);
      for (const key of [k1, k2]) expect(trail).not.toContain(key);
    });
  });
});
