import type { AuditEntry, AuditVerification } from '../../core/audit.ts';
import type { ExecutionRecord } from '../../core/execution.ts';
import type { StoredMessage } from '../../core/messages.ts';
import type { HttpApprovalView } from '../approval-views.ts';
import { approvalCard, approvalFacts, decisionForms, decisionText, type Viewer } from './approval-card.ts';
import { html, type SafeHtml } from './html.ts';
import { compactJson, prettyJson } from './pretty-json.ts';
import { reasonList } from './suggested-reasons.ts';
import { visibleHtml } from './visible-html.ts';

/** Everything waiting for a person, tool calls and workflow requests alike, oldest first. */
export function pendingBody(list: HttpApprovalView[], viewer: Viewer, nowMs: number): SafeHtml {
  return html`<h1>Pending requests <span class="count" id="pending-count">${list.length}</span></h1>
  <p class="hint">Oldest first: agents' tool calls and workflow requests. New requests appear here as they arrive.</p>
  <div id="pending-list">
    <p class="empty"${list.length ? html` hidden` : ''}>No requests are waiting.</p>
    ${list.map((view) => approvalCard(view, viewer, nowMs))}
  </div>
  ${reasonList}`;
}

export function detailBody(
  view: HttpApprovalView,
  viewer: Viewer,
  messages: StoredMessage[],
  execution: ExecutionRecord | null,
  nowMs: number,
): SafeHtml {
  const pending = view.status === 'pending';
  return html`<p><a href="/">← Pending requests</a></p>
  <h1 id="title-${view.id}"><code>${view.tool}</code> for ${view.customer ?? 'no customer'}</h1>
  <p id="live-notice" class="flash ok" role="status" hidden></p>
  <section aria-labelledby="request-h">
    <h2 id="request-h">Request <code class="small">${view.id}</code></h2>
    ${approvalFacts(view, nowMs)}
    <p class="status status-${view.status}"><strong>Status:</strong> ${view.status}. ${pending ? '' : decisionText(view)}</p>
    ${pending ? decisionForms(view, viewer, `/requests/${view.id}`) : ''}
    ${
      execution
        ? html`<h3>Execution</h3>
          <p>${execution.status} at ${execution.finishedAt ?? execution.startedAt} (key <code>${execution.idempotencyKey}</code>)</p>
          ${execution.result === null ? '' : html`<pre class="args">${prettyJson(execution.result)}</pre>`}`
        : ''
    }
  </section>
  ${
    view.kind === 'port'
      ? ''
      : html`<section aria-labelledby="conversation-h">
    <h2 id="conversation-h">Conversation</h2>
    ${conversation(messages, view)}
  </section>`
  }
  ${reasonList}`;
}

/** The session as the model saw it, up to now; the call under review is marked. */
function conversation(messages: StoredMessage[], view: HttpApprovalView): SafeHtml {
  if (messages.length === 0) return html`<p>No messages.</p>`;
  return html`<ol class="conversation">
    ${messages.map(({ message, at }) => {
      if (message.role === 'user')
        return html`<li class="msg user"><span class="role">Customer</span> <time datetime="${at}">${at}</time><p>${visibleHtml(message.text, { multiline: true })}</p></li>`;
      if (message.role === 'assistant')
        return html`<li class="msg assistant"><span class="role">Agent</span> <time datetime="${at}">${at}</time>
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

export function historyBody(list: HttpApprovalView[], filter: { tool?: string; session?: string }): SafeHtml {
  return html`<h1>Decided requests</h1>
  <form method="get" action="/history" class="filters">
    <label>Tool <input name="tool" value="${filter.tool ?? ''}"></label>
    <label>Session <input name="session" value="${filter.session ?? ''}"></label>
    <button type="submit">Filter</button>
  </form>
  ${
    list.length === 0
      ? html`<p>Nothing decided yet.</p>`
      : html`<div class="table-wrap"><table>
    <caption class="visually-hidden">Decided requests, newest first</caption>
    <thead><tr><th scope="col">When</th><th scope="col">Verdict</th><th scope="col">By</th><th scope="col">Tool and arguments</th><th scope="col">Customer</th><th scope="col">Reason</th></tr></thead>
    <tbody>
    ${list.map(
      (view) => html`<tr>
      <td><time datetime="${view.decision?.at ?? view.expiresAt}">${view.decision?.at ?? view.expiresAt}</time></td>
      <td class="verdict-${view.status}">${view.status}</td>
      <td>${view.decision ? (view.decision.kind === 'person' ? view.decision.by : `${view.decision.by} (${view.decision.kind})`) : 'countersign (expiry)'}</td>
      <td><a href="/requests/${view.id}"><code>${view.tool}</code></a> <code class="small">${compactJson(view.args)}</code></td>
      <td>${view.customer ?? '—'} <span class="hint">${view.session}</span></td>
      <td>${visibleHtml(view.decision?.reason ?? '')}</td>
    </tr>`,
    )}
    </tbody></table></div>`
  }`;
}

export function auditBody(entries: AuditEntry[], total: number, verdict: AuditVerification | null): SafeHtml {
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
      <td><time datetime="${entry.at}">${entry.at}</time></td>
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
