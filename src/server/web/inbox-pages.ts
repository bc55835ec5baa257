import type { AuditEntry, AuditVerification } from '../../core/audit.ts';
import type { Viewer } from './approval-card.ts';
import { html, type SafeHtml } from './html.ts';
import { filterForm, pager, type RowsPage } from './list-page.ts';
import { isFiltered, type ListQuery } from './list-query.ts';
import { localTime } from './local-time.ts';
import { compactJson } from './pretty-json.ts';
import { type PaneData, requestPane } from './request-pane.ts';
import { reasonList } from './suggested-reasons.ts';
import { visibleHtml } from './visible-html.ts';

/** A request on its own page: the pane's content with the page's heading. */
export function detailBody(data: PaneData, viewer: Viewer, nowMs: number, timeZone: string): SafeHtml {
  return html`<p><a href="/">← Pending requests</a></p>
  ${requestPane(data, viewer, { nowMs, timeZone, level: 1, returnTo: `/requests/${data.view.id}` })}
  ${reasonList}`;
}

// Decided requests come in the order they were decided; the store's 'decided' sort is that.
export const HISTORY_SORTS = ['decided'] as const;
export const HISTORY_STATUSES = ['approved', 'rejected', 'expired', 'answered'] as const;
const historyWords: Record<string, string> = {
  '': 'Any outcome',
  approved: 'Approved',
  rejected: 'Rejected',
  expired: 'Expired',
  answered: 'Answered',
};

/** Decided requests, with the list's filters (partial, case-insensitive), paged by the store. */
export function historyBody(rows: RowsPage, query: ListQuery, timeZone: string): SafeHtml {
  const zone = timeZone === 'UTC' ? 'UTC' : `your time zone (${timeZone})`;
  return html`<h1>Decided requests</h1>
  ${filterForm('/history', query, { statuses: HISTORY_STATUSES, sorts: HISTORY_SORTS, words: historyWords })}
  ${
    rows.views.length === 0
      ? html`<p>${isFiltered(query) ? html`Nothing decided matches these filters. <a href="/history">Show all</a>.` : 'Nothing decided yet.'}</p>`
      : html`<p class="hint">Times are in ${zone}.</p>
    <div class="table-wrap"><table class="history">
    <caption class="visually-hidden">Decided requests</caption>
    <thead><tr><th scope="col">When</th><th scope="col">Outcome</th><th scope="col">By</th><th scope="col">Tool and arguments</th><th scope="col">Customer</th><th scope="col">Reason</th></tr></thead>
    <tbody>
    ${rows.views.map((view) => {
      const at = view.decision?.at ?? view.expiresAt;
      return html`<tr>
      <td data-label="When"><time datetime="${at}">${localTime(at, timeZone)}</time></td>
      <td data-label="Outcome" class="verdict-${view.status}">${view.status}</td>
      <td data-label="By">${view.decision ? (view.decision.kind === 'person' ? view.decision.by : `${view.decision.by} (${view.decision.kind})`) : 'countersign (expiry)'}</td>
      <td data-label="Tool"><a href="/requests/${view.id}"><code>${view.tool}</code></a> <code class="small">${compactJson(view.args)}</code></td>
      <td data-label="Customer">${view.customer ?? '—'} <span class="hint">${view.session}</span></td>
      <td data-label="Reason">${visibleHtml(view.decision?.reason ?? '')}</td>
    </tr>`;
    })}
    </tbody></table></div>`
  }
  ${pager('/history', query, rows, 'decided')}`;
}

export function auditBody(
  entries: AuditEntry[],
  total: number,
  verdict: AuditVerification | null,
  timeZone: string,
): SafeHtml {
  return html`<h1>Audit trail</h1>
  <form method="get" action="/audit" class="inline">
    <input type="hidden" name="verify" value="1">
    <button type="submit">Verify the chain</button>
  </form>
  ${
    verdict
      ? verdict.ok
        ? html`<p class="flash ok" role="status">Audit chain intact: ${verdict.entries} entries.</p>`
        : verdict.brokenAt === null
          ? html`<p class="flash error" role="alert">Audit trail incomplete: ${verdict.problem}</p>`
          : html`<p class="flash error" role="alert">Audit chain broken at entry ${verdict.brokenAt}: ${verdict.problem}</p>`
      : ''
  }
  <p class="hint">${total} entries; the latest ${entries.length} are shown, newest first.</p>
  <div class="table-wrap"><table>
    <caption class="visually-hidden">Audit entries, newest first</caption>
    <thead><tr><th scope="col">#</th><th scope="col">At</th><th scope="col">Event</th><th scope="col">Actor</th><th scope="col">Request</th><th scope="col">Details</th></tr></thead>
    <tbody>
    ${entries.map(
      (entry) => html`<tr>
      <td>${entry.seq}</td>
      <td><time datetime="${entry.at}">${localTime(entry.at, timeZone)}</time></td>
      <td>${entry.kind}</td>
      <td>${entry.actor}</td>
      <td>${entry.requestId ? html`<a href="/requests/${entry.requestId}"><code class="small">${entry.requestId}</code></a>` : '—'}</td>
      <td><code class="small">${compactJson(entry.data)}</code></td>
    </tr>`,
    )}
    </tbody>
  </table></div>`;
}

export function loginBody(next: string, error: string | null): SafeHtml {
  return html`<h1>Sign in to the approval inbox</h1>
  ${error ? html`<p class="flash error" role="alert">${error}</p>` : ''}
  <form method="post" action="/login" class="login">
    <input type="hidden" name="next" value="${next}">
    <label for="token">Approver token</label>
    <input id="token" name="token" type="password" required autocomplete="current-password" autofocus>
    <button type="submit">Sign in</button>
  </form>
  <p class="hint">Tokens are set with COUNTERSIGN_TOKENS on the server. <code>npm start</code> prints a demo token.</p>`;
}
