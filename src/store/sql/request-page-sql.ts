import { SEALED_TEXT_PREFIX } from '../codec.ts';
import { containsPattern, descending, PAGE_COUNT_CAP, type PagePlan } from '../request-page.ts';
import { APPROVAL_COLUMNS } from './columns.ts';

/**
 * The effect preview as text search sees it: null where the preview is sealed (encryption at
 * rest), so a needle never matches ciphertext (a data key id, base64). The same expression is
 * what the text indexes hold: PostgreSQL's `approvals_effect_trgm` is built on
 * `searchableEffect(lower(effect COLLATE "C"))` and SQLite's `approvals_search` indexes
 * `searchableEffect('effect')` of each row (its view and triggers, migrations: text search),
 * so a sealed preview is never indexed, as ciphertext or otherwise.
 */
export function searchableEffect(folded: string): string {
  return `(CASE WHEN substr(effect, 1, ${SEALED_TEXT_PREFIX.length}) = '${SEALED_TEXT_PREFIX}' THEN NULL ELSE ${folded} END)`;
}

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
   * equality on status and sorts every pending row (as with listDue); `narrowed` when the
   * page reads the rows its full-text index found instead (by rowid, then sorted).
   */
  indexHint?: (plan: PagePlan, narrowed: boolean) => string;
  /**
   * SQLite only: the condition that keeps the rows its full-text index finds for a MATCH
   * (`param`), a superset of those the partial filters match (sqlite/text-search.ts).
   */
  narrowedTo?: (param: string) => string;
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
 *
 * A partial match is a LIKE, which a B-tree cannot serve: walked, a rare needle reads rows
 * until it has a page. Each backend's trigram index finds the candidates instead:
 * PostgreSQL's planner picks its GIN index (pg_trgm) for the same statement when the needle
 * is rare; SQLite passes `narrowing`, a MATCH its FTS5 index answers (sqlite/text-search.ts),
 * and the page sorts those few rows. Either way the keyset and the LIKEs stay, so the rows
 * and their order are the walk's.
 */
export function requestPageSql(dialect: PageDialect, plan: PagePlan, narrowing?: string): PageStatements {
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
    const effect = `${searchableEffect(dialect.folded('effect'))} LIKE ${needle} ESCAPE '\\'`;
    where.push(`(${effect} OR ${like('customer', needle)})`);
  }
  // The LIKEs above stay: the index narrows, the LIKEs decide, so a page finds exactly what
  // the walk (and the memory store) finds.
  const narrowedTo = narrowing === undefined ? undefined : dialect.narrowedTo;
  if (narrowing !== undefined && narrowedTo !== undefined) where.push(narrowedTo(bind(narrowing)));
  const narrowed = narrowedTo !== undefined;
  const filters = [...where];
  const countValues = [...values];

  const key = SORT_COLUMN[plan.sort];
  const down = descending(plan.sort);
  if (plan.after !== null) {
    where.push(`(${key}, id) ${down ? '<' : '>'} (${bind(plan.after.key)}, ${bind(plan.after.id)})`);
  }
  const direction = down ? ' DESC' : '';
  const from = `${dialect.approvals}${dialect.indexHint === undefined ? '' : ` ${dialect.indexHint(plan, narrowed)}`}`;
  const clause = (conditions: string[]) =>
    conditions.length === 0 ? '' : ` WHERE ${conditions.join(' AND ')}`;
  // The limit is a parameter, so each combination of filters is one prepared statement.
  const limit = bind(plan.limit + 1);
  const order = `ORDER BY ${key}${direction}, id${direction}`;
  const page = {
    // Narrowed (SQLite), the candidates are sorted by their keys alone and only the page's
    // rows are read in full: sorting whole rows cost twice the rest of the page.
    text: narrowed
      ? `SELECT ${APPROVAL_COLUMNS} FROM ${dialect.approvals} WHERE rowid IN (SELECT rowid FROM ${from}${clause(where)} ${order} LIMIT ${limit}) ${order}`
      : `SELECT ${APPROVAL_COLUMNS} FROM ${from}${clause(where)} ${order} LIMIT ${limit}`,
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
