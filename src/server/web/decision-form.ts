import type { ApprovalRequest } from '../../core/approval.ts';
import type { JsonValue } from '../../core/json.ts';
import { parseJsonText } from '../../core/parse-json.ts';
import type { RequestDecision, RequestOutcome } from '../../requests/request-desk.ts';
import { formText } from './web-guard.ts';

type Form = Record<string, string | File | (string | File)[]>;

/**
 * What an inbox form asks for, or what is missing, in words for the person. Three forms post
 * here: a tool call's (verdict approve|reject, a reason to reject, "always"), an
 * approval-shaped port's (approved true|false, a field per text property) and any other
 * port's (its answer as JSON).
 */
export function decisionFromForm(form: Form): { decision: RequestDecision } | { error: string } {
  const verdict = form.verdict;
  if (verdict === 'approve' || verdict === 'reject') {
    const reason = formText(form.reason);
    if (verdict === 'reject' && reason === '')
      return { error: 'A rejection needs a reason: the agent reads it and tells the customer.' };
    // The edit the preview showed, exactly as shown (typed JSON, not the text boxes again).
    let edit: Record<string, JsonValue> | undefined;
    if (verdict === 'approve' && typeof form['edit-json'] === 'string') {
      try {
        const parsed = parseJsonText(form['edit-json'], 'The edit');
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
          return { error: 'The edit was not readable. Open the request and edit it again.' };
        edit = parsed as Record<string, JsonValue>;
      } catch {
        return { error: 'The edit was not readable. Open the request and edit it again.' };
      }
    }
    return {
      decision: {
        approved: verdict === 'approve',
        ...(reason ? { reason } : {}),
        ...(verdict === 'approve' && form.remember === 'tool' ? { remember: 'tool' as const } : {}),
        ...(edit ? { edit } : {}),
      },
    };
  }
  if (form.approved === 'true' || form.approved === 'false') {
    const fields: Record<string, JsonValue> = { approved: form.approved === 'true' };
    for (const [key, value] of Object.entries(form)) {
      if (key.startsWith('field:')) fields[key.slice('field:'.length)] = formText(value);
    }
    return { decision: { response: fields } };
  }
  if (form.json !== undefined) {
    try {
      return { decision: { response: parseJsonText(formText(form.json), 'The answer') } };
    } catch (error) {
      return { error: (error as Error).message };
    }
  }
  return { error: 'Choose Approve or Reject.' };
}

/**
 * The flash after a decision: what it did, and what the agent or the run said. `waiting` is
 * the request as it stands when an approval did not decide it (one of a quorum, or an edit
 * that now needs another role): then the words say how far it is and who is needed.
 */
export function outcomeText(
  outcome: RequestOutcome,
  decision: RequestDecision,
  waiting: ApprovalRequest | null = null,
): string {
  const { turn, run } = outcome;
  if (waiting !== null && waiting.status === 'pending' && !('response' in decision)) {
    const left = waiting.approvalsNeeded - waiting.approvals.length;
    const who = waiting.requiredRole ? ` with the ${waiting.requiredRole} role` : '';
    const edited = 'edit' in decision && decision.edit ? ' with your changes' : '';
    return `Your approval${edited} is recorded: ${waiting.approvals.length} of ${waiting.approvalsNeeded}. It waits for ${left === 1 ? 'one more approver' : `${left} more approvers`}${who}; nothing has run yet.`;
  }
  // A decision that did not win threw: what was asked for is what was recorded.
  const done =
    'response' in decision || turn === null
      ? 'Answered.'
      : decision.approved
        ? 'edit' in decision && decision.edit
          ? 'Approved with your changes.'
          : 'Approved.'
        : 'Rejected.';
  const reply = turn?.reply ? ` The agent replied: ${turn.reply}` : '';
  const output = run?.outputs.at(-1);
  const runText = run
    ? ` Run ${run.run} is ${run.status}.${output === undefined ? '' : ` Output: ${typeof output === 'string' ? output : JSON.stringify(output)}`}`
    : '';
  return `${done}${reply}${runText}`;
}
