import type { ArgChange } from './approval.ts';
import { canonicalJson } from './canonical-json.ts';
import { NotEditableError } from './errors/not-editable-error.ts';
import type { JsonValue } from './json.ts';

const isObject = (value: unknown): value is Record<string, JsonValue> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A person's edit applied to a stored call: `patch` names the argument fields to change
 * (top-level) and their new values; every one must be editable. Returns the merged
 * arguments, not yet validated by the tool's schema. Pure: the agent validates, hashes,
 * authorizes and routes the result (src/agent/edit-request.ts).
 */
export function applyEdit(
  request: { id: string; tool: string; args: JsonValue; editable: readonly string[] },
  patch: unknown,
): Record<string, JsonValue> {
  const hint =
    request.editable.length > 0
      ? `Send {"approved": true, "edit": {…}} with only ${request.editable.join(', ')}; nothing was decided.`
      : 'Approve or reject it as proposed; nothing was decided.';
  if (request.editable.length === 0) {
    throw new NotEditableError(`Request ${request.id} (${request.tool}) has no editable fields.`, { hint });
  }
  if (!isObject(patch)) {
    throw new NotEditableError(
      `An edit of request ${request.id} is an object of argument fields and their new values.`,
      { hint },
    );
  }
  if (!isObject(request.args)) {
    throw new NotEditableError(`Request ${request.id} has no argument fields to edit.`, { hint });
  }
  const refused = Object.keys(patch).filter((field) => !request.editable.includes(field));
  if (refused.length > 0) {
    const toolNamed = refused.some((field) => field === 'tool' || field === 'name');
    throw new NotEditableError(
      `Request ${request.id}: ${refused.join(', ')} ${refused.length === 1 ? 'is' : 'are'} not editable for ${request.tool}${toolNamed ? ' (the tool of a request never changes)' : ''}; editable: ${request.editable.join(', ')}.`,
      { hint },
    );
  }
  const args: Record<string, JsonValue> = { ...request.args };
  for (const [field, value] of Object.entries(patch)) if (value !== undefined) args[field] = value;
  return args;
}

/** What differs between two argument objects, field by field (sorted by name). */
export function diffArgs(before: JsonValue, after: JsonValue): ArgChange[] {
  const from = isObject(before) ? before : {};
  const to = isObject(after) ? after : {};
  const fields = [...new Set([...Object.keys(from), ...Object.keys(to)])].sort();
  const diff: ArgChange[] = [];
  for (const field of fields) {
    const a = from[field];
    const b = to[field];
    if (a !== undefined && b !== undefined && canonicalJson(a) === canonicalJson(b)) continue;
    diff.push({ field, ...(a !== undefined ? { from: a } : {}), ...(b !== undefined ? { to: b } : {}) });
  }
  return diff;
}

/** The changes in words for the model and the audit: `quantity 12 → 6`. */
export function describeDiff(diff: readonly ArgChange[]): string {
  const show = (value: JsonValue | undefined) => (value === undefined ? '(none)' : canonicalJson(value));
  return diff.map((change) => `${change.field} ${show(change.from)} → ${show(change.to)}`).join(', ');
}
