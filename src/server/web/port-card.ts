import { approvalFields } from '../../requests/answer-shape.ts';
import type { HttpApprovalView } from '../approval-views.ts';
import { cannotDecide, type Viewer } from './approval-card.ts';
import { html, type SafeHtml } from './html.ts';

/**
 * The answer form of a workflow port request, drawn from the port's response schema. An
 * approval-shaped answer (`{approved: boolean, …strings}`) gets Approve and Reject buttons
 * with a field per string; anything else gets a JSON field. Who may answer is the one rule
 * tool calls are judged by (cannotDecide), so the page never offers what would be refused.
 */
export function answerForm(view: HttpApprovalView, viewer: Viewer, returnTo: string): SafeHtml {
  const refusal = cannotDecide(view, viewer, 'answer');
  if (refusal) return html`<p class="note">${refusal}</p>`;
  const action = `/requests/${encodeURIComponent(view.id)}/decide`;
  const hidden = html`<input type="hidden" name="csrf" value="${viewer.csrf ?? ''}">
    <input type="hidden" name="return" value="${returnTo}">`;
  const fields = approvalFields(view.responseSchema ?? {});
  if (fields !== null) {
    return html`<form method="post" action="${action}" class="decide port-form decide-form">
      ${hidden}
      ${fields.map(
        (
          name,
        ) => html`<label for="${view.id}-${name}">${name} <span class="hint">(sent with the answer)</span></label>
          <input id="${view.id}-${name}" name="field:${name}" required maxlength="2000" autocomplete="off">`,
      )}
      <button type="submit" name="approved" value="true" class="approve" data-shortcut="approve" aria-describedby="title-${view.id}">Approve</button>
      <button type="submit" name="approved" value="false" class="reject" aria-describedby="title-${view.id}">Reject</button>
    </form>`;
  }
  return html`<form method="post" action="${action}" class="decide port-form decide-form">
    ${hidden}
    <label for="${view.id}-json">Answer (JSON matching the port's response schema)</label>
    <textarea id="${view.id}-json" name="json" rows="3" required></textarea>
    <button type="submit" aria-describedby="title-${view.id}">Send the answer</button>
  </form>`;
}
