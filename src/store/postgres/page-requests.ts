import type { PageDialect } from '../sql/request-page-sql.ts';

/**
 * PostgreSQL's paging dialect. lower() of "C" text folds ASCII only, which is what SQLite's
 * LIKE ignores and what the memory stores fold (request-page.ts: foldCase), so a partial
 * match finds the same rows on every backend. The planner picks the index from the keyset
 * order by itself, and for a rare text or customer needle the trigram index of migration 016
 * on the very expressions the LIKEs test (`lower(customer COLLATE "C")`, the searchable
 * effect), then sorts the few rows it finds (postgres-store.test.ts and text-search.test.ts
 * check the plans).
 */
export function postgresPageDialect(approvals: string): PageDialect {
  return {
    approvals,
    param: (index) => `$${index}`,
    folded: (column) => `lower(${column} COLLATE "C")`,
  };
}
