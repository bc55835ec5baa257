import { ageText, remainingText } from '../../core/time-text.ts';
import { hasRole } from '../auth/identity.ts';
import type { PortRequestView } from '../workflows/workflow-desk.ts';
import type { Viewer } from './approval-card.ts';
import { html, type SafeHtml } from './html.ts';
import { prettyJson } from './pretty-json.ts';

/**
 * An answer form drawn from the port's response schema. `{approved: boolean, …strings}` —
 * the shape of an approval — gets Approve and Reject buttons with a field per string;
 * anything else gets a JSON field.
 */
function answerForm(view: PortRequestView, viewer: Viewer): SafeHtml {
  if (view.requiredRole && !hasRole(viewer.identity, view.requiredRole))
    return html`<p class="note">Answering ${view.port} needs the ${view.requiredRole} role.</p>`;
  const action = `/runs/${encodeURIComponent(view.run)}/requests/${encodeURIComponent(view.id)}/respond`;
  const csrf = html`<input type="hidden" name="csrf" value="${viewer.csrf ?? ''}">`;
  const properties = (view.responseSchema.properties ?? {}) as Record<string, { type?: unknown }>;
  const names = Object.keys(properties);
  const approvalShaped =
    properties.approved?.type === 'boolean' &&
    names.every((name) => name === 'approved' || properties[name]?.type === 'string');
  if (approvalShaped) {
    const fields = names.filter((name) => name !== 'approved');
    return html`<form method="post" action="${action}" class="decide port-form">
      ${csrf}
      ${fields.map(
        (
          name,
        ) => html`<label for="${view.id}-${name}">${name} <span class="hint">(sent with the answer)</span></label>
          <input id="${view.id}-${name}" name="field:${name}" required maxlength="2000" autocomplete="off">`,
      )}
      <button type="submit" name="approved" value="true" class="approve" aria-describedby="title-${view.id}">Approve</button>
      <button type="submit" name="approved" value="false" class="reject" aria-describedby="title-${view.id}">Reject</button>
    </form>`;
  }
  return html`<form method="post" action="${action}" class="decide port-form">
    ${csrf}
    <label for="${view.id}-json">Answer (JSON matching the port's response schema)</label>
    <textarea id="${view.id}-json" name="json" rows="3" required></textarea>
    <button type="submit">Send the answer</button>
  </form>`;
}

export function portCard(view: PortRequestView, viewer: Viewer, nowMs: number): SafeHtml {
  return html`<article class="card" id="${view.id}" aria-labelledby="title-${view.id}">
    <h2 id="title-${view.id}"><code>${view.port}</code> <span class="for">workflow ${view.workflow}, run ${view.run}</span></h2>
    <dl class="facts">
      <dt>Request</dt><dd><pre class="args">${prettyJson(view.data)}</pre></dd>
      <dt>Raised</dt><dd><time datetime="${view.createdAt}" data-age>${ageText(view.createdAt, nowMs)}</time></dd>
      ${
        view.expiresAt
          ? html`<dt>Expires in</dt><dd><time datetime="${view.expiresAt}" data-countdown>${remainingText(view.expiresAt, nowMs)}</time></dd>`
          : ''
      }
      ${view.requiredRole ? html`<dt>Needs</dt><dd><span class="badge">${view.requiredRole}</span></dd>` : ''}
    </dl>
    ${answerForm(view, viewer)}
  </article>`;
}

export function portSection(list: PortRequestView[], viewer: Viewer, nowMs: number): SafeHtml {
  if (list.length === 0) return html``;
  return html`<h2 class="section">Workflow requests <span class="count">${list.length}</span></h2>
    <p class="hint">Runs waiting at a request port for a person's answer, oldest first.</p>
    <div id="port-list">${list.map((view) => portCard(view, viewer, nowMs))}</div>`;
}
