import type { PagePlan } from '../request-page.ts';
import type { PageDialect } from '../sql/request-page-sql.ts';

/**
 * The index each page walks, named (INDEXED BY) because SQLite's planner, given an equality
 * on status, would otherwise pick it and sort every pending row before the LIMIT. The most
 * selective exact filter wins: a session's or a run's requests, then a status, then all.
 * A page narrowed by the text index reads its candidates by rowid instead (NOT INDEXED still
 * allows rowid lookups) and sorts those few rows.
 */
function indexFor(plan: PagePlan, narrowed: boolean): string {
  if (narrowed) return 'NOT INDEXED';
  if (plan.sort === 'expiring') return 'INDEXED BY approvals_due';
  if (plan.sort === 'decided') return 'INDEXED BY approvals_decided';
  if (plan.exact.session !== undefined) return 'INDEXED BY approvals_by_session';
  if (plan.exact.run !== undefined) return 'INDEXED BY approvals_by_run';
  if (plan.exact.status !== undefined) return 'INDEXED BY approvals_by_status';
  return 'INDEXED BY approvals_by_created';
}

export const SQLITE_PAGE_DIALECT: PageDialect = {
  approvals: 'approvals',
  param: (index) => `?${index}`,
  // SQLite's LIKE already ignores ASCII case.
  folded: (column) => column,
  indexHint: indexFor,
  // The candidates of text-search.ts: rows of the FTS5 table share the request's rowid.
  narrowedTo: (param) =>
    `rowid IN (SELECT rowid FROM approvals_search WHERE approvals_search MATCH ${param})`,
};
