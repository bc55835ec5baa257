import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunPageQuery } from '../checkpoint-store.ts';
import { encodeRunCursor, planRunPage } from '../run-page.ts';
import { runPageSql } from '../sql/run-page-sql.ts';
import { SQLITE_RUN_PAGE_DIALECT } from './sqlite-checkpoints.ts';
import { RUNS_OF_SQL } from './sqlite-erasure.ts';
import { createSqliteStore } from './sqlite-store.ts';

/**
 * A page of runs walks one index in its order from the cursor, so it reads about `limit`
 * rows however many runs there are: SQLite's own plans for every filter and both sorts.
 */
const dir = mkdtempSync(join(tmpdir(), 'countersign-run-plans-'));
const path = join(dir, 'store.db');
await createSqliteStore({ path }).close();
const db = new DatabaseSync(path);
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const plan = (text: string, values: ReadonlyArray<string | number>) =>
  db
    .prepare(`EXPLAIN QUERY PLAN ${text}`)
    .all(...values)
    .map((row) => String(row.detail))
    .join('\n');

/** The query with a cursor bound to its own filters and sort, as a page hands one out. */
const paged = (query: RunPageQuery): RunPageQuery => ({
  ...query,
  after: encodeRunCursor(
    {
      run: 'r-1',
      workflow: 'refund',
      version: 1,
      status: 'running',
      checkpoint: 'cp',
      customer: null,
      createdAt: '2030-01-01T00:00:00.000Z',
      updatedAt: '2030-01-01T00:00:00.000Z',
    },
    planRunPage(query),
  ),
});

describe('pages of runs: query plans', () => {
  it('walks the index of the most selective filter in the page order: no sort, no scan of the table', () => {
    const cases: Array<[RunPageQuery, RegExp]> = [
      [{ limit: 50 }, /SCAN workflow_runs USING (COVERING )?INDEX workflow_runs_by_created/],
      [
        paged({ limit: 50 }),
        /SEARCH workflow_runs USING INDEX workflow_runs_by_created \(\(created_at,id\)<\(\?,\?\)\)/,
      ],
      [
        paged({ limit: 50, sort: 'oldest' }),
        /SEARCH workflow_runs USING INDEX workflow_runs_by_created \(\(created_at,id\)>\(\?,\?\)\)/,
      ],
      [
        paged({ limit: 50, status: 'awaiting_input' }),
        /workflow_runs_by_status \(status=\? AND \(created_at,id\)<\(\?,\?\)\)/,
      ],
      [
        paged({ limit: 50, workflow: 'refund', sort: 'oldest' }),
        /workflow_runs_by_workflow \(workflow=\? AND \(created_at,id\)>\(\?,\?\)\)/,
      ],
      [
        paged({ limit: 50, customer: 'c-100' }),
        /workflow_runs_by_customer \(customer=\? AND \(created_at,id\)<\(\?,\?\)\)/,
      ],
      [
        { limit: 50, customer: 'c-100', status: 'completed', workflow: 'refund' },
        /workflow_runs_by_customer \(customer=\?\)/,
      ],
      [{ limit: 50, workflow: 'refund', status: 'completed' }, /workflow_runs_by_workflow \(workflow=\?\)/],
    ];
    for (const [query, index] of cases) {
      const { page, count } = runPageSql(SQLITE_RUN_PAGE_DIALECT, planRunPage({ ...query, count: true }));
      const pagePlan = plan(page.text, page.values);
      expect(pagePlan, JSON.stringify(query)).toMatch(index);
      for (const text of [pagePlan, count === null ? '' : plan(count.text, count.values)]) {
        expect(text, JSON.stringify(query)).not.toMatch(/TEMP B-TREE|SCAN workflow_runs$/m);
      }
    }
  });

  it("erasure finds a customer's runs by the index of runs by customer", () => {
    expect(plan(RUNS_OF_SQL, ['c-100'])).toMatch(
      /^SEARCH workflow_runs USING (COVERING )?INDEX workflow_runs_by_customer \(customer=\?\)$/,
    );
  });
});
