import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { fireDueNudges, NUDGE_PAGE } from '../../src/requests/fire-nudges.ts';
import { at, leasedSession, raise, request } from '../../src/store/conformance/fixtures.ts';
import { nudgePlan } from '../../src/store/conformance/timer-cases.ts';
import { createPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { dropSchema, freshSchema, postgresForTests, TEST_PG_URL, withAdmin } from '../helpers/postgres.ts';

/*
 * Rows whose next_nudge_at was edited into text that is no time but sorts before every due
 * one: more than a page of them. The due-query returns them first on every pass; their
 * nudges' compare-and-set (on next_nudge_at) can never hold, so nothing on the page moves.
 * The valid nudge behind them must still go out, and the edited rows' own nudges with it.
 */
const GARBAGE = ['2000-garbage', '', '0', '1999-99-99T99:99:99.999Z'];

/** Sets `next_nudge_at` of the rows `ids` to `value`, as someone with database access would. */
type Edit = (value: string, ids: string[]) => Promise<void>;

async function garbageCase(store: Store, edit: Edit) {
  await leasedSession(store, 's1');
  const edited = Array.from({ length: NUDGE_PAGE + 5 }, (_, i) => `g${String(i).padStart(3, '0')}`);
  await raise(store, 's1', [
    ...edited.map((id) => request({ id, session: 's1', nudges: nudgePlan() })),
    request({ id: 'valid', session: 's1', nudges: nudgePlan({ remindAt: at(40) }) }),
  ]);
  for (const [n, value] of GARBAGE.entries())
    await edit(
      value,
      edited.filter((_, i) => i % GARBAGE.length === n),
    );
  const warnings: string[] = [];
  const fired = [
    ...(await fireDueNudges({ store, now: new Date(at(41)), log: (line) => warnings.push(line) })),
    ...(await fireDueNudges({ store, now: new Date(at(42)), log: (line) => warnings.push(line) })),
  ];
  const reminded = new Set(
    fired.filter((event) => event.type === 'request.reminder').map((e) => e.requestId),
  );
  expect(reminded.has('valid')).toBe(true);
  // The edited rows' nudges are whole: put back in step, they fire too, once each.
  expect(reminded.size).toBe(edited.length + 1);
  expect(fired.filter((event) => event.type === 'request.reminder')).toHaveLength(edited.length + 1);
  expect(warnings.length).toBeGreaterThan(0);
  expect(warnings[0]).toMatch(/next nudge time/);
  // And they leave the due-query once nothing of theirs is due.
  expect(await store.listNudgesDue({ at: at(42), limit: 10 })).toEqual([]);
}

const url = await postgresForTests();
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('garbage in next_nudge_at does not block the nudge sweep', () => {
  it('SQLite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-nudge-garbage-'));
    dirs.push(dir);
    const path = join(dir, 'store.db');
    const store = createSqliteStore({ path });
    try {
      await garbageCase(store, async (value, ids) => {
        const db = new DatabaseSync(path);
        try {
          db.prepare(
            `UPDATE approvals SET next_nudge_at = ? WHERE id IN (${ids.map(() => '?').join(', ')})`,
          ).run(value, ...ids);
        } finally {
          db.close();
        }
      });
    } finally {
      await store.close();
    }
  });

  it.skipIf(url === null)('PostgreSQL', async () => {
    const schema = freshSchema('nudgegarbage');
    const store = await createPostgresStore({ connectionString: url ?? TEST_PG_URL, schema });
    try {
      await garbageCase(store, (value, ids) =>
        withAdmin(async (client) => {
          await client.query(`UPDATE "${schema}".approvals SET next_nudge_at = $1 WHERE id = ANY($2)`, [
            value,
            ids,
          ]);
        }),
      );
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });
});
