import { containsPattern, descending, PAGE_COUNT_CAP, type PagePlan } from '../request-page.ts';
import { APPROVAL_COLUMNS } from './columns.ts';

/** What differs between the two SQL backends' paging statements. */
export interface PageDialect {
  /** The (qualified) approvals table. */
  approvals: string;
  /** The n-th (1-based) parameter: `?n` in SQLite, `$n` in PostgreSQL. */
  param: (index: number) => string;
  /** `column` lower-cased in ASCII, for a LIKE against a folded pattern. */
  folded: (column: string) => string;
  /**
   * SQLite only: the index to walk for a sort, named because its planner otherwise takes an
   * equality on status and sorts every pending row (as with listDue).
   */
  indexHint?: (plan: PagePlan) => string;
}

export interface PageStatements {
  page: { text: string; values: Array<string | number> };
  count: { text: string; values: Array<string | number> } | null;
}

const SORT_COLUMN = {
  oldest: 'created_at',
  newest: 'created_at',
  expiring: 'expires_at',
  decided: 'decided_at',
};

/**
 * The page and its capped count as SQL. The sort is a keyset over one index:
 * `(key, id) > (cursor)` then `ORDER BY key, id LIMIT n + 1`, so the database starts at the
 * cursor and reads forward, never the rows before it. Filters are conditions on the walk.
 */
export function requestPageSql(dialect: PageDialect, plan: PagePlan): PageStatements {
  const values: Array<string | number> = [];
  const bind = (value: string | number): string => {
    values.push(value);
    return dialect.param(values.length);
  };
  const where: string[] = [];
  // Literal, so a partial index (pending rows, decided rows) provably applies.
  if (plan.sort === 'expiring') where.push(`status = 'pending'`);
  if (plan.sort === 'decided') where.push('decided_at IS NOT NULL');
  const { exact, partial } = plan;
  if (exact.status !== undefined && plan.sort !== 'expiring') where.push(`status = ${bind(exact.status)}`);
  if (exact.kind !== undefined) where.push(`kind = ${bind(exact.kind)}`);
  if (exact.session !== undefined) where.push(`session = ${bind(exact.session)}`);
  if (exact.run !== undefined) where.push(`run = ${bind(exact.run)}`);
  if (exact.role !== undefined) where.push(`required_role = ${bind(exact.role)}`);
  if (plan.openAt !== undefined) {
    where.push(
      plan.exact.status === 'pending'
        ? `expires_at > ${bind(plan.openAt)}`
        : `NOT (status = 'pending' AND expires_at <= ${bind(plan.openAt)})`,
    );
  }
  const like = (column: string, param: string) => `${dialect.folded(column)} LIKE ${param} ESCAPE '\\'`;
  if (partial.tool !== undefined) where.push(like('tool', bind(containsPattern(partial.tool))));
  if (partial.customer !== undefined) where.push(like('customer', bind(containsPattern(partial.customer))));
  if (partial.text !== undefined) {
    const needle = bind(containsPattern(partial.text));
    where.push(`(${like('effect', needle)} OR ${like('customer', needle)})`);
  }
  const filters = [...where];
  const countValues = [...values];

  const key = SORT_COLUMN[plan.sort];
  const down = descending(plan.sort);
  if (plan.after !== null) {
    where.push(`(${key}, id) ${down ? '<' : '>'} (${bind(plan.after.key)}, ${bind(plan.after.id)})`);
  }
  const direction = down ? ' DESC' : '';
  const from = `${dialect.approvals}${dialect.indexHint === undefined ? '' : ` ${dialect.indexHint(plan)}`}`;
  const clause = (conditions: string[]) =>
    conditions.length === 0 ? '' : ` WHERE ${conditions.join(' AND ')}`;
  // The limit is a parameter, so each combination of filters is one prepared statement.
  const limit = bind(plan.limit + 1);
  const page = {
    text: `SELECT ${APPROVAL_COLUMNS} FROM ${from}${clause(where)} ORDER BY ${key}${direction}, id${direction} LIMIT ${limit}`,
    values,
  };
  if (!plan.count) return { page, count: null };
  // Capped: reads at most PAGE_COUNT_CAP + 1 index entries, however many match.
  const count = {
    text: `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${from}${clause(filters)} LIMIT ${PAGE_COUNT_CAP + 1}) AS capped`,
    values: countValues,
  };
  return { page, count };
}
