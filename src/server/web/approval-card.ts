import { type DecisionAction, decisionRefusal } from '../../core/decision-rights.ts';
import { ageText, remainingText } from '../../core/time-text.ts';
import type { HttpApprovalView } from '../approval-views.ts';
import type { Identity } from '../auth/identity.ts';
import { editForm } from './edit-form.ts';
import { html, type SafeHtml } from './html.ts';
import { localTime } from './local-time.ts';
import { decidedText, type Reader } from './people-messages.ts';
import { answerForm } from './port-card.ts';
import { prettyJson } from './pretty-json.ts';
import { visibleHtml } from './visible-html.ts';

export interface Viewer {
  identity: Identity;
  csrf: string | null;
}

/** Why this viewer may not decide, or null when they may. */
export function cannotDecide(
  view: HttpApprovalView,
  viewer: Viewer,
  action: DecisionAction = 'decide',
): string | null {
  // The same rule the decision itself is checked with, so the page never offers a refusal.
  return decisionRefusal(
    {
      raisedBy: view.raisedBy,
      customer: view.customer,
      requiredRole: view.requiredRole,
      escalatedTo: view.escalatedTo,
      selfApproval: view.selfApproval,
      approvedBy: view.approvals.map((approval) => approval.by),
    },
    { name: viewer.identity.name, roles: viewer.identity.roles },
    action,
  );
}

/** Approve, or reject with a reason: plain forms, so deciding works without JavaScript. */
export function decisionForms(view: HttpApprovalView, viewer: Viewer, returnTo: string): SafeHtml {
  if (view.kind === 'port') return answerForm(view, viewer, returnTo);
  const quorum = quorumText(view, viewer.identity.name);
  const refusal = cannotDecide(view, viewer);
  if (refusal) return html`${quorum}<p class="note">${refusal}</p>`;
  const action = `/requests/${view.id}/decide`;
  const hidden = html`<input type="hidden" name="csrf" value="${viewer.csrf ?? ''}">
    <input type="hidden" name="return" value="${returnTo}">`;
  return html`${quorum}<div class="decide">
    <form method="post" action="${action}" class="approve-form decide-form">
      ${hidden}
      ${
        view.standingAllowed
          ? html`<label class="check"><input type="checkbox" name="remember" value="tool"> Always approve ${view.tool} for this session</label>`
          : ''
      }
      <button type="submit" name="verdict" value="approve" class="approve" data-shortcut="approve" aria-describedby="title-${view.id}">Approve</button>
    </form>
    <form method="post" action="${action}" class="reject-form decide-form">
      ${hidden}
      <label for="reason-${view.id}">Reason for rejecting <span class="hint">(the agent and the customer read it)</span></label>
      <input id="reason-${view.id}" name="reason" list="suggested-reasons" required maxlength="2000" autocomplete="off" data-shortcut="reject">
      <button type="submit" name="verdict" value="reject" class="reject" aria-describedby="title-${view.id}">Reject</button>
    </form>
  </div>
  ${editForm(view, viewer, returnTo)}`;
}

/**
 * "1 of 2 approvals, by mia": how far a quorum is, when more than one person must approve.
 * Nothing for a request one approval decides.
 */
export function quorumText(view: HttpApprovalView, viewerName: string): SafeHtml {
  const { approvals, approvalsNeeded } = view;
  if (approvalsNeeded <= 1 || view.status !== 'pending') return html``;
  const by = approvals.map((approval) =>
    approval.by.toLowerCase() === viewerName.toLowerCase() ? 'you' : approval.by,
  );
  const left = approvalsNeeded - approvals.length;
  return html`<p class="quorum" data-quorum="${approvals.length}/${approvalsNeeded}">${approvals.length} of ${approvalsNeeded} approvals${by.length ? `, by ${by.join(' and ')}` : ''}. ${left === 1 ? 'One more approver' : `${left} more approvers`} needed; any rejection stops it.</p>`;
}

/** One request, every argument in full, rendered as text; times in the viewer's zone. */
export function approvalFacts(view: HttpApprovalView, nowMs: number, timeZone: string): SafeHtml {
  const port = view.kind === 'port';
  return html`<dl class="facts">
    <dt>${port ? 'Workflow request' : 'Tool'}</dt><dd><code>${view.tool}</code>${view.requiredRole ? html` <span class="badge">needs ${view.requiredRole}</span>` : ''}</dd>
    <dt>Effect</dt><dd class="effect">${visibleHtml(view.effect)}</dd>
    <dt>${port ? 'Request' : 'Arguments'}</dt><dd><pre class="args">${prettyJson(view.args)}</pre></dd>
    ${
      port
        ? html`<dt>Customer</dt><dd>${view.customer ?? 'no customer'} <span class="hint">workflow ${view.agent}, run</span> <code>${view.run ?? ''}</code></dd>`
        : html`<dt>Customer</dt><dd>${view.customer ?? 'no signed-in customer'} <span class="hint">session</span> <code>${view.session}</code></dd>`
    }
    <dt>Raised</dt><dd>${localTime(view.createdAt, timeZone)} <span class="hint">(<time datetime="${view.createdAt}" data-age>${ageText(view.createdAt, nowMs)}</time>)</span></dd>
    ${
      view.status === 'pending'
        ? html`<dt>Expires</dt><dd>${localTime(view.expiresAt, timeZone)} <span class="hint">(in <time datetime="${view.expiresAt}" data-countdown>${remainingText(view.expiresAt, nowMs)}</time>)</span></dd>`
        : ''
    }
  </dl>`;
}

/** How a decided request was decided, in the viewer's words and zone. */
export function decisionText(view: HttpApprovalView, reader: Reader): SafeHtml {
  const d = view.decision;
  if (!d)
    return html`${view.status === 'expired' ? `It expired at ${localTime(view.expiresAt, reader.timeZone)} without a decision, so nothing was done.` : 'Waiting for a decision.'}`;
  if (d.verdict === 'answered')
    return html`Answered by ${d.by} at ${localTime(d.at, reader.timeZone)}${d.response === undefined ? '' : html`: <code>${JSON.stringify(d.response)}</code>`}`;
  return html`${visibleHtml(decidedText(d, reader))}`;
}
