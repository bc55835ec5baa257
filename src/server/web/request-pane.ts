import { describeDiff } from '../../core/edit-call.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import type { StoredMessage } from '../../core/messages.ts';
import type { HttpApprovalView } from '../approval-views.ts';
import { approvalFacts, cannotDecide, decisionForms, decisionText, type Viewer } from './approval-card.ts';
import { html, type SafeHtml } from './html.ts';
import { localTime } from './local-time.ts';
import type { Reader } from './people-messages.ts';
import { compactJson, prettyJson } from './pretty-json.ts';
import type { RowState } from './request-row.ts';
import { visibleHtml } from './visible-html.ts';

export interface PaneData {
  view: HttpApprovalView;
  messages: StoredMessage[];
  execution: ExecutionRecord | null;
  state: RowState;
}

/**
 * One request in full: its facts, how it stands, the ways to decide it and the conversation
 * that led to it. The same markup is the pane beside the list (heading level 2, returning to
 * the list after a decision) and the request's own page (level 1, returning to itself).
 */
export function requestPane(
  data: PaneData,
  viewer: Viewer,
  options: { nowMs: number; timeZone: string; level: 1 | 2; returnTo: string },
): SafeHtml {
  const { view, messages, execution, state } = data;
  const reader: Reader = { name: viewer.identity.name, timeZone: options.timeZone };
  const pending = view.status === 'pending';
  const title = html`<code>${view.tool}</code> for ${view.customer ?? 'no customer'}`;
  const heading =
    options.level === 1
      ? html`<h1 id="title-${view.id}">${title}</h1>`
      : html`<h2 id="title-${view.id}" class="pane-title">${title}</h2>`;
  const sub = options.level === 1 ? 'h2' : 'h3';
  return html`<div class="request-detail" data-request="${view.id}" data-status="${view.status}">
    ${heading}
    ${options.level === 2 ? html`<p class="hint"><a href="/requests/${view.id}">Open on its own page</a></p>` : ''}
    <p class="live-notice flash ok" role="status" hidden></p>
    ${state.overdue ? html`<p class="flash error overdue-note">Overdue: this request has waited longer than its tool allows${state.escalated ? ' and was escalated' : ''}. Decide it or claim it.</p>` : ''}
    ${approvalFacts(view, options.nowMs, options.timeZone)}
    ${
      view.edit
        ? html`<div class="pending-edit flash ok">
          <p><strong>Edited by ${view.edit.by === viewer.identity.name ? 'you' : view.edit.by}</strong> at ${localTime(view.edit.at, options.timeZone)}: approving approves the call as edited, and that is what runs.</p>
          <p>${describeDiff(view.edit.diff)}</p>
          <p class="effect">${visibleHtml(view.edit.effect)}</p>
        </div>`
        : ''
    }
    ${pending ? claimForm(view, viewer, state, options) : ''}
    <p class="status status-${view.status}"><strong>Status:</strong> ${view.status}. ${pending ? '' : decisionText(view, reader)}</p>
    ${pending ? decisionForms(view, viewer, options.returnTo) : ''}
    ${
      execution
        ? html`<${sub}>Execution</${sub}>
          <p>${execution.status} at ${localTime(execution.finishedAt ?? execution.startedAt, options.timeZone)} (key <code>${execution.idempotencyKey}</code>)</p>
          ${execution.result === null ? '' : html`<pre class="args">${prettyJson(execution.result)}</pre>`}`
        : ''
    }
    ${
      view.kind === 'port'
        ? ''
        : html`<${sub} id="conversation-${view.id}">Conversation</${sub}>
    ${conversation(messages, view, options.timeZone)}`
    }
  </div>`;
}

/**
 * Who holds it, and the button to claim it (for 15 minutes) or give it back. Whoever may
 * decide may claim (the same rule); someone else's claim shows who and until when, and
 * deciding never needs a claim.
 */
function claimForm(
  view: HttpApprovalView,
  viewer: Viewer,
  state: RowState,
  options: { timeZone: string; returnTo: string },
): SafeHtml {
  const mine = state.claim !== null && state.claim.by.toLowerCase() === viewer.identity.name.toLowerCase();
  const note = state.claim
    ? html`<strong>Claimed by ${mine ? 'you' : state.claim.by}</strong> until ${localTime(state.claim.until, options.timeZone)}. ${mine ? 'Others see that you are on it.' : 'You can still decide it.'}`
    : html`Nobody has claimed it.`;
  const mayClaim = cannotDecide(view, viewer) === null && (state.claim === null || mine);
  return html`<form method="post" action="/requests/${view.id}/claim" class="claim-form claim-note">
    <input type="hidden" name="csrf" value="${viewer.csrf ?? ''}">
    <input type="hidden" name="return" value="${options.returnTo}">
    <span>${note}</span>
    ${
      mayClaim
        ? html` <button type="submit" name="claim" value="${mine ? 'release' : 'claim'}" data-shortcut="claim" aria-describedby="title-${view.id}">${mine ? 'Release' : 'Claim for 15 minutes'}</button>`
        : ''
    }
  </form>`;
}

/** The session as the model saw it, up to now; the call under review is marked. */
function conversation(messages: StoredMessage[], view: HttpApprovalView, timeZone: string): SafeHtml {
  if (messages.length === 0) return html`<p>No messages.</p>`;
  const when = (at: string) => html`<time datetime="${at}">${localTime(at, timeZone)}</time>`;
  return html`<ol class="conversation" aria-labelledby="conversation-${view.id}">
    ${messages.map(({ message, at }) => {
      if (message.role === 'user')
        return html`<li class="msg user"><span class="role">Customer</span> ${when(at)}<p>${visibleHtml(message.text, { multiline: true })}</p></li>`;
      if (message.role === 'assistant')
        return html`<li class="msg assistant"><span class="role">Agent</span> ${when(at)}
          ${message.text ? html`<p>${visibleHtml(message.text, { multiline: true })}</p>` : ''}
          ${(message.calls ?? []).map(
            (call) =>
              html`<p class="call${call.id === view.callId ? ' this-call' : ''}">${call.id === view.callId ? html`<strong>This request:</strong> ` : ''}Proposed <code>${call.tool}</code> <code>${compactJson(call.args)}</code></p>`,
          )}</li>`;
      return html`<li class="msg tool"><span class="role">Tool results</span>
        ${message.results.map(
          (result) =>
            html`<p><code>${result.tool}</code>${result.isError ? ' (not done)' : ''}: <code>${compactJson(result.output)}</code></p>`,
        )}</li>`;
    })}
  </ol>`;
}
