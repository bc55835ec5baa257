import type { DecisionStats } from '../../store/ports/decision-stats.ts';
import { html, type SafeHtml } from './html.ts';
import { localTime } from './local-time.ts';
import { visibleHtml } from './visible-html.ts';

/** The windows the page offers, in days; the first is the default. */
export const STATS_WINDOWS = [7, 1, 30] as const;

/** "850 ms", "4m 10s", "2h 5m", "3d 4h": how long a decision took. */
export function durationText(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s % 60}s`;
  return `${s}s`;
}

const kindWords: Record<string, string> = {
  person: 'by a person',
  'moved-on': 'the customer moved on',
  expiry: 'expired',
  'standing-rule': 'an "always" rule',
  'auto-rule': 'an automatic rule',
};

/**
 * Numbers for the team, from the same store query `/v1/stats` answers with (decisionStats):
 * how long decisions take by tool and role, why requests are rejected, what expires, and who
 * decides how many. Nothing here counts rows itself.
 */
export function statsBody(stats: DecisionStats, days: number, timeZone: string): SafeHtml {
  const n = (value: number) => value.toLocaleString('en-US');
  const { decided } = stats;
  const all = decided.approved + decided.rejected + decided.answered + decided.expired;
  return html`<h1>Numbers for the team</h1>
  <form method="get" action="/stats" class="filters" aria-label="Time window">
    <label>Window <select name="days">${STATS_WINDOWS.map(
      (d) =>
        html`<option value="${d}"${d === days ? html` selected` : ''}>${d === 1 ? 'Last 24 hours' : `Last ${d} days`}</option>`,
    )}</select></label>
    <button type="submit">Show</button>
  </form>
  <p class="hint">From ${localTime(stats.since, timeZone)} to ${localTime(stats.until, timeZone)}: ${n(all)} requests decided (${n(decided.approved)} approved, ${n(decided.rejected)} rejected, ${n(decided.answered)} answered, ${n(decided.expired)} expired). The same numbers are at <code>/v1/stats</code>.</p>
  <div class="stats-grid">
  <section aria-labelledby="ttd-h">
    <h2 id="ttd-h">Time to decision</h2>
    ${
      stats.timeToDecision.length === 0
        ? html`<p>No person decided anything in this window.</p>`
        : html`<div class="table-wrap"><table>
      <caption class="visually-hidden">Time from raised to decided by a person, by tool and role</caption>
      <thead><tr><th scope="col">Tool</th><th scope="col">Role</th><th scope="col">Decisions</th><th scope="col">Median (p50)</th><th scope="col">p90</th></tr></thead>
      <tbody>${stats.timeToDecision.map(
        (row) =>
          html`<tr><td><code>${row.tool}</code>${row.kind === 'port' ? html` <span class="hint">(workflow)</span>` : ''}</td><td>${row.role ?? 'any'}</td><td>${n(row.decisions)}</td><td>${durationText(row.p50Ms)}</td><td>${durationText(row.p90Ms)}</td></tr>`,
      )}</tbody>
    </table></div>`
    }
  </section>
  <section aria-labelledby="rejections-h">
    <h2 id="rejections-h">Rejections <span class="count">${n(stats.rejections.total)}</span></h2>
    ${
      stats.rejections.byKind.length
        ? html`<ul>${stats.rejections.byKind.map((k) => html`<li>${n(k.count)} ${kindWords[k.kind] ?? k.kind}</li>`)}</ul>`
        : html`<p>None in this window.</p>`
    }
    ${
      stats.rejections.reasons.length
        ? html`<h3>Reasons people gave</h3>
      <p class="hint">Most frequent first, from the latest ${n(stats.rejections.reasonsFrom)} rejections by a person.</p>
      <div class="table-wrap"><table>
        <caption class="visually-hidden">Rejection reasons, most frequent first</caption>
        <thead><tr><th scope="col">Reason</th><th scope="col">Times</th></tr></thead>
        <tbody>${stats.rejections.reasons.map((r) => html`<tr><td>${visibleHtml(r.reason)}</td><td>${n(r.count)}</td></tr>`)}</tbody>
      </table></div>`
        : ''
    }
  </section>
  <section aria-labelledby="expiries-h">
    <h2 id="expiries-h">Expired without a decision <span class="count">${n(stats.expiries.total)}</span></h2>
    ${
      stats.expiries.byTool.length
        ? html`<div class="table-wrap"><table>
      <caption class="visually-hidden">Expiries by tool</caption>
      <thead><tr><th scope="col">Tool</th><th scope="col">Expired</th></tr></thead>
      <tbody>${stats.expiries.byTool.map((e) => html`<tr><td><code>${e.tool}</code></td><td>${n(e.count)}</td></tr>`)}</tbody>
    </table></div>`
        : html`<p>Nothing expired in this window.</p>`
    }
  </section>
  <section aria-labelledby="approvers-h">
    <h2 id="approvers-h">Requests per approver</h2>
    ${
      stats.approvers.length
        ? html`<div class="table-wrap"><table>
      <caption class="visually-hidden">Decisions per approver, most first</caption>
      <thead><tr><th scope="col">Approver</th><th scope="col">Approved</th><th scope="col">Rejected</th><th scope="col">Answered</th></tr></thead>
      <tbody>${stats.approvers.map((a) => html`<tr><td>${a.approver}</td><td>${n(a.approved)}</td><td>${n(a.rejected)}</td><td>${n(a.answered)}</td></tr>`)}</tbody>
    </table></div>`
        : html`<p>No person decided anything in this window.</p>`
    }
  </section>
  </div>`;
}
