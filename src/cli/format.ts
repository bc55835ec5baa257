import type { ApprovalView, ExecutionView, TurnResult } from '../agent/views.ts';
import type { AuditEntry } from '../core/audit.ts';
import { readableJson } from '../core/canonical-json.ts';
import { describeDiff } from '../core/edit-call.ts';
import { remainingText } from '../core/time-text.ts';
import { jsonEscape, revealInvisible } from '../core/visible-text.ts';

/** Human-readable durations for expiry countdowns: 23h 59m, 4m 10s, 3s. */
export function formatRemaining(untilIso: string, now = Date.now()): string {
  return remainingText(untilIso, now);
}

/** Every argument in full: a person approves what the arguments say, not a summary. */
export function formatApproval(view: ApprovalView): string {
  const port = view.kind === 'port';
  const waiting = view.status === 'pending';
  const lines = [
    waiting
      ? `${port ? 'Answer needed' : 'Approval needed'}: ${view.id}`
      : `Request ${view.id} (${view.status})`,
    port ? `  port:    ${view.tool} of workflow ${view.agent}` : `  tool:    ${view.tool}`,
    `${port ? '  request: ' : '  args:    '}${readableJson(view.args)}`,
    `  effect:  ${oneLine(view.effect)}`,
    port
      ? `  run:     ${view.run ?? '-'}${waiting ? `   expires in ${formatRemaining(view.expiresAt)}` : ''}`
      : `  session: ${view.session}${waiting ? `   expires in ${formatRemaining(view.expiresAt)}` : ''}`,
  ];
  if (view.customer) lines.push(`  for:     ${view.customer}`);
  if (waiting && (view.approvalsNeeded > 1 || view.approvals.length > 0)) {
    const who = view.requiredRole ? ` with the ${view.requiredRole} role` : '';
    const so = view.approvals.length > 0 ? `; so far ${view.approvals.map((a) => a.by).join(', ')}` : '';
    lines.push(
      `  needs:   ${view.approvalsNeeded} approver${view.approvalsNeeded === 1 ? '' : 's'}${who}${so}`,
    );
  }
  if (view.edit) {
    lines.push(
      `  edited:  ${readableJson(view.edit.args)} by ${view.edit.by} (${oneLine(describeDiff(view.edit.diff))})`,
    );
    lines.push(`  now:     ${oneLine(view.edit.effect)}`);
  }
  if (waiting && view.editable.length > 0) {
    lines.push(`  editable: ${view.editable.join(', ')}   (countersign approve ${view.id} --edit '{…}')`);
  }
  if (waiting && view.claim) lines.push(`  claimed: by ${view.claim.by} until ${view.claim.until}`);
  if (waiting && view.escalatedTo)
    lines.push(`  escalated to ${view.escalatedTo} at ${view.nudges?.escalatedAt ?? '-'}`);
  else if (waiting && view.nudges?.remindedAt) lines.push(`  reminded at ${view.nudges.remindedAt}`);
  if (view.integrity === 'mismatch') {
    lines.push(
      '  WARNING: the stored arguments no longer match their hash — do not approve; check for tampering.',
    );
  }
  if (view.decision) {
    const d = view.decision;
    lines.push(`  decided: ${d.verdict} by ${d.by} at ${d.at}${d.reason ? ` — ${oneLine(d.reason)}` : ''}`);
    if (d.response !== undefined) lines.push(`  answer:  ${readableJson(d.response)}`);
    if (d.edit) lines.push(`  ran as:  ${readableJson(d.edit.args)} (${oneLine(describeDiff(d.edit.diff))})`);
    if (d.approvals) lines.push(`  approvers: ${d.approvals.map((a) => a.by).join(', ')}`);
  }
  return lines.join('\n');
}

export function formatTurn(result: TurnResult): string {
  const parts: string[] = [];
  // The reply keeps its line breaks; continuation lines are indented, so a reply cannot print a
  // line that looks like one of ours.
  if (result.reply) parts.push(`agent: ${result.reply.split(/\r?\n/).map(oneLine).join('\n       ')}`);
  for (const approval of result.approvals) parts.push(formatApproval(approval));
  for (const execution of result.unknown) {
    parts.push(
      `Outcome unknown: ${execution.tool} ${readableJson(execution.args)} (request ${execution.requestId}) may or may not have run.\n` +
        `  Check, then settle it: countersign reconcile ${execution.requestId} --succeeded|--failed [--result TEXT]`,
    );
  }
  if (parts.length === 0) parts.push(`(session ${result.session}: ${result.status})`);
  return parts.join('\n');
}

export function formatExecution(view: ExecutionView): string {
  return `${view.requestId}  ${view.status.padEnd(9)} ${view.tool} ${readableJson(view.args)}  ${view.result === null ? '' : `→ ${oneLine(readableJson(view.result))}`}`;
}

export function formatAudit(entry: AuditEntry): string {
  const subject = entry.requestId ?? entry.session ?? '';
  // An erased entry keeps its kind, parties and link; its data is gone.
  const data =
    entry.erasedAt === undefined ? oneLine(readableJson(entry.data)) : `(data erased ${entry.erasedAt})`;
  return `#${entry.seq} ${entry.at} ${entry.kind.padEnd(22)} ${subject} by ${entry.actor} ${data}`;
}

/**
 * Escapes line breaks and every other control, zero-width or direction-changing character
 * (the set is revealInvisible's), so nothing a model or a customer wrote can forge a line of
 * output, move the cursor, reorder or hide text.
 */
export function oneLine(text: string): string {
  return revealInvisible(text, (char) => (char === '\n' ? '\\n' : char === '\r' ? '\\r' : jsonEscape(char)));
}
