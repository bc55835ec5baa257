import type { PageDialect } from '../sql/request-page-sql.ts';

/**
 * PostgreSQL's paging dialect. lower() of "C" text folds ASCII only, which is what SQLite's
 * LIKE ignores and what the memory stores fold (request-page.ts: foldCase), so a partial
 * match finds the same rows on every backend. The planner picks the index from the keyset
 * order by itself (postgres-store.test.ts checks the plans).
 */
export function postgresPageDialect(approvals: string): PageDialect {
  return {
    approvals,
    param: (index) => `$${index}`,
    folded: (column) => `lower(${column} COLLATE "C")`,
  };
}
