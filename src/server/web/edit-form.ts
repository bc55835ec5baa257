import type { ArgChange } from '../../core/approval.ts';
import { describeDiff } from '../../core/edit-call.ts';
import type { JsonValue } from '../../core/json.ts';
import type { HttpApprovalView } from '../approval-views.ts';
import type { Viewer } from './approval-card.ts';
import { html, type SafeHtml } from './html.ts';
import { compactJson } from './pretty-json.ts';
import { formText } from './web-guard.ts';

type Form = Record<string, unknown>;

const isObject = (value: unknown): value is Record<string, JsonValue> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A field's value as it sits in a text box: strings as they are, anything else as JSON. */
function asText(value: JsonValue | undefined): string {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * The edit a form carries (`edit:<field>` boxes), typed like the proposed value: a number
 * stays a number, true/false a boolean, a string a string, anything else is read as JSON.
 * Only fields whose text changed are in the edit. An unreadable value is a message for
 * the person, and nothing is sent.
 */
export function editFromForm(
  view: Pick<HttpApprovalView, 'args' | 'editable'>,
  form: Form,
): { edit: Record<string, JsonValue> } | { error: string } {
  const args = isObject(view.args) ? view.args : {};
  const edit: Record<string, JsonValue> = {};
  for (const field of view.editable) {
    const key = `edit:${field}`;
    if (form[key] === undefined) continue;
    const text = formText(form[key]);
    const from = args[field];
    if (text === asText(from)) continue;
    if (typeof from === 'number') {
      const n = Number(text);
      if (text === '' || !Number.isFinite(n))
        return { error: `${field} must be a number; “${text}” is not.` };
      edit[field] = n;
    } else if (typeof from === 'boolean') {
      if (text !== 'true' && text !== 'false')
        return { error: `${field} is true or false; “${text}” is neither.` };
      edit[field] = text === 'true';
    } else if (typeof from === 'string' || from === undefined) {
      edit[field] = text;
    } else {
      try {
        edit[field] = JSON.parse(text) as JsonValue;
      } catch {
        return { error: `${field} is written as JSON (like the proposed value); “${text}” is not JSON.` };
      }
    }
  }
  if (Object.keys(edit).length === 0)
    return { error: 'Nothing was changed. Change a value, or approve the call as proposed.' };
  return { edit };
}

/** "Edit, then approve": a box per editable field, sent first to the preview of the change. */
export function editForm(view: HttpApprovalView, viewer: Viewer, returnTo: string): SafeHtml {
  if (view.kind !== 'tool-call' || view.editable.length === 0) return html``;
  const args = isObject(view.args) ? view.args : {};
  return html`<details class="edit" data-shortcut="edit">
    <summary>Edit, then approve <span class="hint">(${view.editable.join(', ')})</span></summary>
    <form method="post" action="/requests/${view.id}/edit" class="edit-form">
      <input type="hidden" name="csrf" value="${viewer.csrf ?? ''}">
      <input type="hidden" name="return" value="${returnTo}">
      ${view.editable.map(
        (
          field,
        ) => html`<label for="edit-${view.id}-${field}">${field} <span class="hint">(proposed: <code>${asText(args[field])}</code>)</span></label>
        <input id="edit-${view.id}-${field}" name="edit:${field}" value="${asText(args[field])}" autocomplete="off" maxlength="2000">`,
      )}
      <button type="submit">Show the changes</button>
    </form>
  </details>`;
}

/**
 * The change before it is confirmed: each field from → to, and the button that approves the
 * edited call (the same decision form, carrying the edit). The agent validates, re-hashes,
 * authorizes and routes the edited call again; this page only shows what will be asked.
 */
export function editPreview(
  view: HttpApprovalView,
  viewer: Viewer,
  edit: Record<string, JsonValue>,
  diff: readonly ArgChange[],
  returnTo: string,
): SafeHtml {
  return html`<div class="edit-preview">
    <h3>Approve with these changes?</h3>
    <table class="diff">
      <caption class="visually-hidden">Changed arguments of ${view.tool}</caption>
      <thead><tr><th scope="col">Field</th><th scope="col">Proposed</th><th scope="col">Approved as</th></tr></thead>
      <tbody>${diff.map(
        (change) => html`<tr><th scope="row"><code>${change.field}</code></th>
          <td><del><code>${change.from === undefined ? '(none)' : compactJson(change.from)}</code></del></td>
          <td><ins><code>${change.to === undefined ? '(none)' : compactJson(change.to)}</code></ins></td></tr>`,
      )}</tbody>
    </table>
    <p class="hint">The agent is told it was approved with changes: ${describeDiff(diff)}. Changing a value can need another role or a second approver.</p>
    <form method="post" action="/requests/${view.id}/decide" class="decide-form approve-edit">
      <input type="hidden" name="csrf" value="${viewer.csrf ?? ''}">
      <input type="hidden" name="return" value="${returnTo}">
      ${Object.entries(edit).map(([field, value]) => html`<input type="hidden" name="edit:${field}" value="${asText(value)}">`)}
      <input type="hidden" name="edit-json" value="${JSON.stringify(edit)}">
      <button type="submit" name="verdict" value="approve" class="approve" data-shortcut="approve">Approve with changes</button>
      <a href="${returnTo === '/' || returnTo.startsWith('/?') ? returnTo : `/requests/${view.id}`}">Back, change nothing</a>
    </form>
  </div>`;
}
