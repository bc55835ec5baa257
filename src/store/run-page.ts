import { InvalidCursorError } from '../core/errors/invalid-cursor-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { unsearchable } from '../core/storable-text.ts';
import {
  RUN_STATUSES,
  type RunPage,
  type RunPageQuery,
  type RunSort,
  type RunStatus,
  type RunSummary,
} from './checkpoint-store.ts';
import { type CursorFilters, decodeKeysetCursor, encodeKeysetCursor } from './keyset-cursor.ts';
import { keysetPage, MAX_PAGE_LIMIT, PAGE_COUNT_CAP } from './request-page.ts';

// Paging rules of runs once for every backend, as request-page.ts is for requests: the
// query's validation, the cursor, the order, and the page over runs held in memory (the
// memory and file stores). The SQL backends build their statement from the same plan in
// sql/run-page-sql.ts.

export const RUN_SORTS: readonly RunSort[] = ['newest', 'oldest'];

/** A validated query: the sort resolved, the cursor decoded, blank filters dropped. */
export interface RunPagePlan {
  sort: RunSort;
  limit: number;
  count: boolean;
  after: { key: string; id: string } | null;
  exact: { status?: RunStatus; workflow?: string; customer?: string };
}

/** A run cursor's order, apart from every request cursor's. */
const orderOf = (sort: RunSort) => `runs.${sort}`;

function nonEmpty(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/** Checks the query (INVALID_INPUT, INVALID_CURSOR) before any backend reads a row. */
export function planRunPage(query: RunPageQuery): RunPagePlan {
  const sort = query.sort ?? 'newest';
  if (!RUN_SORTS.includes(sort)) {
    throw new InvalidInputError(`Unknown sort "${String(sort)}" for runs.`, {
      hint: `Use one of ${RUN_SORTS.join(', ')}.`,
    });
  }
  if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_PAGE_LIMIT) {
    throw new InvalidInputError(
      `A page limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}; got ${String(query.limit)}.`,
      { hint: `Ask for at most ${MAX_PAGE_LIMIT} and follow \`next\` for more.` },
    );
  }
  if (query.status !== undefined && !RUN_STATUSES.includes(query.status)) {
    throw new InvalidInputError(`Unknown run status "${String(query.status)}".`, {
      hint: `Use one of ${RUN_STATUSES.join(', ')}.`,
    });
  }
  const workflow = nonEmpty(query.workflow);
  const customer = nonEmpty(query.customer);
  // No run holds these, and every backend says so alike.
  for (const [name, value] of [
    ['workflow', workflow],
    ['customer', customer],
  ] as const) {
    const unfit = value === undefined ? null : unsearchable(value);
    if (unfit !== null) throw new InvalidInputError(`A ${name} filter cannot hold ${unfit}.`);
  }
  const exact: RunPagePlan['exact'] = {
    ...(query.status === undefined ? {} : { status: query.status }),
    ...(workflow === undefined ? {} : { workflow }),
    ...(customer === undefined ? {} : { customer }),
  };
  return {
    sort,
    limit: query.limit,
    count: query.count === true,
    after: query.after === undefined || query.after === '' ? null : decodeRunCursor(query.after, sort, exact),
    exact,
  };
}

/**
 * What a run cursor is bound to: the filters as the plan applies them (status, and workflow
 * and customer trimmed, blank ones none). Not a filter: `limit` (a client may change the page
 * size between pages), `count`, and `sort` (the cursor's order names it).
 */
function cursorFilters(exact: RunPagePlan['exact']): CursorFilters {
  return exact;
}

export function encodeRunCursor(run: RunSummary, plan: Pick<RunPagePlan, 'sort' | 'exact'>): string {
  return encodeKeysetCursor(orderOf(plan.sort), run.createdAt, run.run, cursorFilters(plan.exact));
}

export function decodeRunCursor(
  cursor: string,
  sort: RunSort,
  exact: RunPagePlan['exact'],
): { key: string; id: string } {
  return decodeKeysetCursor(cursor, {
    order: orderOf(sort),
    filters: cursorFilters(exact),
    otherOrder: (order) => {
      const other = RUN_SORTS.find((candidate) => orderOf(candidate) === order);
      if (other === undefined) {
        return new InvalidCursorError('The page cursor belongs to another list, not to the runs.', {
          hint: 'Pass the `next` of a page of runs, or start again without a cursor.',
        });
      }
      return new InvalidCursorError(`The page cursor belongs to sort "${other}", not "${sort}".`, {
        hint: 'Keep the sort of the first page while following `next`, or start again without a cursor.',
      });
    },
  });
}

export function runDescending(sort: RunSort): boolean {
  return sort === 'newest';
}

export function matchesRunPlan(run: RunSummary, plan: RunPagePlan): boolean {
  const { status, workflow, customer } = plan.exact;
  if (status !== undefined && run.status !== status) return false;
  if (workflow !== undefined && run.workflow !== workflow) return false;
  if (customer !== undefined && run.customer !== customer) return false;
  return true;
}

/** Byte order, as the SQL backends compare their "C" text. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function runPageOrder(sort: RunSort): (a: RunSummary, b: RunSummary) => number {
  const sign = runDescending(sort) ? -1 : 1;
  return (a, b) => sign * (compareText(a.createdAt, b.createdAt) || compareText(a.run, b.run));
}

export function afterRunCursor(run: RunSummary, plan: RunPagePlan): boolean {
  if (plan.after === null) return true;
  const order = compareText(run.createdAt, plan.after.key) || compareText(run.run, plan.after.id);
  return runDescending(plan.sort) ? order < 0 : order > 0;
}

/** The page from up to `limit + 1` runs in order after the cursor: the extra one says there is more. */
export function runPageOf(rows: readonly RunSummary[], plan: RunPagePlan, total?: number): RunPage {
  return keysetPage(rows, plan.limit, (last) => encodeRunCursor(last, plan), total);
}

/** A page over runs held in memory (the memory and file stores): the same answer SQL gives. */
export function pageRunsInMemory(runs: Iterable<RunSummary>, plan: RunPagePlan): RunPage {
  const matching = [...runs].filter((run) => matchesRunPlan(run, plan));
  const after = matching.filter((run) => afterRunCursor(run, plan)).sort(runPageOrder(plan.sort));
  return runPageOf(
    after.slice(0, plan.limit + 1),
    plan,
    plan.count ? Math.min(matching.length, PAGE_COUNT_CAP + 1) : undefined,
  );
}
