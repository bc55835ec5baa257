import type { HttpApprovalView } from '../approval-views.ts';
import type { Viewer } from './approval-card.ts';
import { html, type SafeHtml } from './html.ts';
import { isFiltered, type ListQuery, listHref } from './list-query.ts';
import { NO_STATE, type RowState, requestRow } from './request-row.ts';
import { shortcutList } from './shortcuts.ts';
import { reasonList } from './suggested-reasons.ts';

/** One page of rows as the store returned it: keyset cursors, and how many match in all. */
export interface RowsPage {
  views: HttpApprovalView[];
  /** How many requests match the filters (all pages), counted up to a cap: `exact` false is "at least". */
  total: { count: number; exact: boolean };
  /** The cursor of the next page; null on the last. */
  next: string | null;
  /** The page link did not fit (a cursor of another order or other filters, or mangled): this is the first page instead. */
  restarted: boolean;
}

export const PENDING_SORTS = ['oldest', 'newest', 'expiring'] as const;

const sortWords: Record<string, string> = {
  oldest: 'Oldest first',
  newest: 'Newest first',
  expiring: 'Expiring soonest',
  decided: 'Latest decision first',
};

/** "1,000+" when the store stopped counting at its cap. */
export function totalText(total: RowsPage['total']): string {
  return `${total.count.toLocaleString('en-US')}${total.exact ? '' : '+'}`;
}

/** The search and filter form; one for the list and the history, each with its own choices. */
export function filterForm(
  path: string,
  query: ListQuery,
  choices: { statuses: readonly string[]; sorts: readonly string[]; words: Record<string, string> | null },
): SafeHtml {
  const option = (value: string, label: string, current: string) =>
    html`<option value="${value}"${value === current ? html` selected` : ''}>${label}</option>`;
  return html`<form method="get" action="${path}" class="filters" role="search" aria-label="Filter requests">
    <label>Search <span class="hint">(effect, customer)</span> <input id="search" type="search" name="q" value="${query.q}" autocomplete="off"></label>
    <label>Tool <input name="tool" value="${query.tool}" autocomplete="off"></label>
    <label>Customer <input name="customer" value="${query.customer}" autocomplete="off"></label>
    <label>Role <input name="role" value="${query.role}" autocomplete="off"></label>
    ${
      choices.words
        ? html`<label>Status <select name="status">${['', ...choices.statuses].map((s) => option(s, choices.words?.[s] ?? s, query.status))}</select></label>`
        : ''
    }
    ${
      choices.sorts.length > 1
        ? html`<label>Sort <select name="sort">${choices.sorts.map((s) => option(s, sortWords[s] ?? s, query.sort))}</select></label>`
        : ''
    }
    <button type="submit">Show</button>
    ${isFiltered(query) ? html`<a href="${path}">Clear filters</a>` : ''}
  </form>`;
}

/** "Showing 51–100 of 500 · First page · Next page". */
export function pager(
  path: string,
  query: ListQuery,
  rows: RowsPage,
  defaultSort: ListQuery['sort'],
): SafeHtml {
  const offset = (query.page - 1) * query.limit + 1;
  const shown = rows.views.length
    ? html`Showing ${offset.toLocaleString('en-US')}–${(offset + rows.views.length - 1).toLocaleString('en-US')} of <strong class="total">${totalText(rows.total)}</strong>`
    : html`Showing none of <strong class="total">${totalText(rows.total)}</strong>`;
  return html`${rows.restarted ? html`<p class="flash error" role="alert">That page link was made for other filters or another order, or is out of date, so this is the first page.</p>` : ''}<nav class="pager" aria-label="Pages">
    <p class="showing" data-offset="${offset}" data-page="${query.page}">${shown} (page ${query.page})</p>
    ${query.after ? html`<a href="${listHref(path, query, { after: '', page: 1 }, defaultSort)}">First page</a>` : ''}
    ${rows.next ? html`<a rel="next" href="${listHref(path, query, { after: rows.next, page: query.page + 1 }, defaultSort)}">Next page</a>` : ''}
  </nav>`;
}

/**
 * The inbox: the compact list with its filters, one request open beside it (its
 * conversation and the ways to decide), and the bulk decision under the list. Every part is
 * a plain link or form; the script only saves the page loads.
 */
export function pendingListBody(options: {
  rows: RowsPage;
  query: ListQuery;
  viewer: Viewer;
  nowMs: number;
  timeZone: string;
  selected: string | null;
  pane: SafeHtml | null;
  states: ReadonlyMap<string, RowState>;
}): SafeHtml {
  const { rows, query, viewer, nowMs, timeZone, selected, pane, states } = options;
  const base = listHref('/', query, {});
  const hrefOf = (id: string) =>
    `${base}${base.includes('?') ? '&' : '?'}selected=${encodeURIComponent(id)}#pane`;
  const empty = isFiltered(query)
    ? html`No waiting request matches these filters. <a href="/">Show all</a>.`
    : html`No requests are waiting. New ones appear here as they arrive.`;
  return html`<h1>Pending requests <span class="count" id="pending-count">${totalText(rows.total)}</span></h1>
  ${filterForm('/', query, { statuses: [], sorts: PENDING_SORTS, words: null })}
  ${shortcutList}
  <p id="arrivals" class="flash ok" role="status" hidden></p>
  <div class="split">
    <div class="list-pane">
      <form method="post" action="/requests/bulk" id="bulk" class="bulk">
        <input type="hidden" name="csrf" value="${viewer.csrf ?? ''}">
        <input type="hidden" name="return" value="${listHref('/', query, {})}">
      </form>
      <div class="table-wrap">
      <table class="requests" data-sort="${query.sort}" data-filtered="${isFiltered(query) ? 'yes' : 'no'}" data-last="${rows.next ? 'no' : 'yes'}">
        <caption class="visually-hidden">Requests waiting for a decision, ${sortWords[query.sort] ?? query.sort}</caption>
        <thead><tr><th scope="col"><span class="visually-hidden">Select</span></th><th scope="col">Tool</th><th scope="col">Customer</th><th scope="col">Effect</th><th scope="col">Age</th><th scope="col">Expires</th><th scope="col">Role</th><th scope="col">Claim</th></tr></thead>
        <tbody id="pending-list">
        ${rows.views.map((view) =>
          requestRow(view, viewer, {
            nowMs,
            timeZone,
            selected: view.id === selected,
            href: hrefOf(view.id),
            state: states.get(view.id) ?? NO_STATE,
          }),
        )}
        </tbody>
      </table>
      </div>
      <p class="empty"${rows.views.length ? html` hidden` : ''}>${empty}</p>
      ${pager('/', query, rows, 'oldest')}
      <fieldset class="bulk-bar" form="bulk">
        <legend>Decide the selected requests</legend>
        <p class="hint">Each is decided and audited on its own, with this reason.</p>
        <label for="bulk-reason">Reason <span class="hint">(needed to reject; the agent and the customer read it)</span></label>
        <input id="bulk-reason" name="reason" form="bulk" list="suggested-reasons" maxlength="2000" autocomplete="off">
        <div class="bulk-buttons">
          <button type="submit" form="bulk" name="verdict" value="approve" class="approve">Approve selected</button>
          <button type="submit" form="bulk" name="verdict" value="reject" class="reject">Reject selected</button>
        </div>
      </fieldset>
    </div>
    <section id="pane" class="pane" aria-label="The open request" tabindex="-1">
      ${pane ?? html`<p class="hint">Choose a request to see its conversation and decide it.</p>`}
    </section>
  </div>
  ${reasonList}`;
}
