import { ageText, remainingText } from '../../core/time-text.ts';
import type { HttpApprovalView } from '../approval-views.ts';
import { cannotDecide, type Viewer } from './approval-card.ts';
import { html, type SafeHtml } from './html.ts';
import { localTime } from './local-time.ts';
import { visibleHtml } from './visible-html.ts';

/** Within this long of its expiry a request is marked as expiring (the script keeps it current). */
export const EXPIRING_MS = 15 * 60_000;

/** What a row shows beside the request: who holds it, whether it is overdue, quorum so far. */
export interface RowState {
  claim: { by: string; until: string } | null;
  overdue: boolean;
  escalated: boolean;
}

export const NO_STATE: RowState = { claim: null, overdue: false, escalated: false };

/**
 * A request is overdue once its reminder time has come (the tool's `remindAfter`), escalated
 * once its escalation fired; the claim is the one that holds now (a lapsed claim is none).
 */
export function rowState(
  view: Pick<HttpApprovalView, 'claim' | 'nudges' | 'escalatedTo' | 'status'>,
  nowIso: string,
): RowState {
  const remindAt = view.nudges?.remindAt ?? null;
  return {
    claim: view.claim,
    overdue:
      view.status === 'pending' &&
      (view.nudges?.remindedAt != null ||
        (remindAt !== null && remindAt <= nowIso) ||
        view.escalatedTo !== null),
    escalated: view.escalatedTo !== null,
  };
}

/**
 * One request as a row of the compact list: tool, customer, effect, age, expiry, required
 * role, claim. The tool is a link to the request (the pane beside the list without a
 * script, loaded in place with one), and the checkbox selects it for a bulk decision.
 */
export function requestRow(
  view: HttpApprovalView,
  viewer: Viewer,
  options: { nowMs: number; timeZone: string; selected: boolean; href: string; state: RowState },
): SafeHtml {
  const { nowMs, timeZone, selected, href, state } = options;
  const decidable = cannotDecide(view, viewer) === null;
  const left = Date.parse(view.expiresAt) - nowMs;
  const classes = [
    'row',
    selected ? 'current' : '',
    state.overdue ? 'overdue' : '',
    state.escalated ? 'escalated' : '',
    left < EXPIRING_MS ? 'expiring' : '',
  ].filter(Boolean);
  const who = `${view.tool} for ${view.customer ?? 'no customer'}`;
  const claim = state.claim
    ? html`<span class="claim">${state.claim.by === viewer.identity.name ? 'you' : state.claim.by}<span class="hint"> until <time datetime="${state.claim.until}">${localTime(state.claim.until, timeZone)}</time></span></span>`
    : html`<span class="hint">—</span>`;
  return html`<tr id="${view.id}" class="${classes.join(' ')}" data-request="${view.id}" data-kind="${view.kind}"${selected ? html` aria-current="true"` : ''}>
    <td class="pick">${
      decidable && view.kind === 'tool-call'
        ? html`<input type="checkbox" name="id" value="${view.id}" form="bulk" aria-label="Select ${who}">`
        : ''
    }</td>
    <td data-label="Tool"><a class="open" href="${href}" data-open="${view.id}"><code>${view.tool}</code><span class="visually-hidden"> for ${view.customer ?? 'no customer'}</span></a>${
      state.overdue ? html` <span class="badge overdue-badge">overdue</span>` : ''
    }${state.escalated ? html` <span class="badge">escalated</span>` : ''}</td>
    <td data-label="Customer">${view.customer ?? html`<span class="hint">none</span>`}</td>
    <td data-label="Effect" class="effect effect-cell"><span class="clamp">${visibleHtml(view.effect)}</span></td>
    <td data-label="Age"><time datetime="${view.createdAt}" data-age title="${localTime(view.createdAt, timeZone)}">${ageText(view.createdAt, nowMs)}</time></td>
    <td data-label="Expires"><time datetime="${view.expiresAt}" data-countdown title="${localTime(view.expiresAt, timeZone)}">${remainingText(view.expiresAt, nowMs)}</time></td>
    <td data-label="Role">${view.requiredRole ?? html`<span class="hint">any</span>`}${
      view.approvalsNeeded > 1
        ? html` <span class="badge" title="approvals so far, of those needed">${view.approvals.length} of ${view.approvalsNeeded}</span>`
        : ''
    }</td>
    <td data-label="Claim">${claim}</td>
  </tr>`;
}
