import { RUN_COLUMNS } from '../checkpoint-row-readers.ts';
import { PAGE_COUNT_CAP } from '../request-page.ts';
import { type RunPagePlan, runDescending } from '../run-page.ts';

/** What differs between the two SQL backends' statements for a page of runs. */
export interface RunPageDialect {
  /** The (qualified) workflow_runs table. */
  runs: string;
  /** The n-th (1-based) parameter: `?n` in SQLite, `$n` in PostgreSQL. */
  param: (index: number) => string;
  /** SQLite only: the index to walk, named (INDEXED BY) so the planner never sorts instead. */
  indexHint?: (plan: RunPagePlan) => string;
}

export interface RunPageStatements {
  page: { text: string; values: Array<string | number> };
  count: { text: string; values: Array<string | number> } | null;
}

/**
 * The index each page walks, both backends: each exact filter has one in the page's order
 * (migration 15 / 015), `(filter, created_at, id)`, and the most selective filter given wins:
 * a customer's runs, then a workflow's, then a status. Another filter given with it is a
 * condition on that walk.
 */
export function runPageIndex(plan: RunPagePlan): string {
  if (plan.exact.customer !== undefined) return 'workflow_runs_by_customer';
  if (plan.exact.workflow !== undefined) return 'workflow_runs_by_workflow';
  if (plan.exact.status !== undefined) return 'workflow_runs_by_status';
  return 'workflow_runs_by_created';
}

/**
 * A page of runs and its capped count as SQL: `(created_at, id) < (cursor)` then
 * `ORDER BY created_at DESC, id DESC LIMIT n + 1` (ascending for `oldest`), so the database
 * starts at the cursor and reads forward, never the runs before it.
 */
export function runPageSql(dialect: RunPageDialect, plan: RunPagePlan): RunPageStatements {
  const values: Array<string | number> = [];
  const bind = (value: string | number): string => {
    values.push(value);
    return dialect.param(values.length);
  };
  const where: string[] = [];
  const { status, workflow, customer } = plan.exact;
  if (customer !== undefined) where.push(`customer = ${bind(customer)}`);
  if (workflow !== undefined) where.push(`workflow = ${bind(workflow)}`);
  if (status !== undefined) where.push(`status = ${bind(status)}`);
  const filters = [...where];
  const countValues = [...values];
  const down = runDescending(plan.sort);
  if (plan.after !== null) {
    where.push(`(created_at, id) ${down ? '<' : '>'} (${bind(plan.after.key)}, ${bind(plan.after.id)})`);
  }
  const direction = down ? ' DESC' : '';
  const from = `${dialect.runs}${dialect.indexHint === undefined ? '' : ` ${dialect.indexHint(plan)}`}`;
  const clause = (conditions: string[]) =>
    conditions.length === 0 ? '' : ` WHERE ${conditions.join(' AND ')}`;
  // The limit is a parameter, so each combination of filters is one prepared statement.
  const limit = bind(plan.limit + 1);
  const page = {
    text: `SELECT ${RUN_COLUMNS} FROM ${from}${clause(where)} ORDER BY created_at${direction}, id${direction} LIMIT ${limit}`,
    values,
  };
  if (!plan.count) return { page, count: null };
  const count = {
    text: `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${from}${clause(filters)} LIMIT ${PAGE_COUNT_CAP + 1}) AS capped`,
    values: countValues,
  };
  return { page, count };
}
