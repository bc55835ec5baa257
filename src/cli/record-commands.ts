import {
  auditTrail,
  listExecutions,
  listRules,
  revokeRule as revoke,
  showRequest,
  sweepExpired,
  verifyAudit,
} from '../agent/queries.ts';
import type { ApprovalView } from '../agent/views.ts';
import { toApprovalView } from '../agent/views.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import type { ExecutionStatus } from '../core/execution.ts';
import { type ApprovalQuery, toPageQuery } from '../requests/request-list.ts';
import { decodeExecutionCursor, encodeExecutionCursor } from '../store/execution-page.ts';
import type { Command } from './command-input.ts';
import type { CliValues } from './command-table.ts';
import { decider } from './decider.ts';
import { formatApproval, formatAudit, formatExecution } from './format.ts';
import { type Output, printList } from './output.ts';
import { again, CLI_PAGE, printNext, wholeOption } from './paging.ts';

function wholeAfterSeq(text: string): number {
  if (!/^\d{1,15}$/.test(text))
    throw new InvalidInputError(`audit --after takes the last seq read (a whole number), not ${text}.`);
  return Number(text);
}

/** The commands that read (or sweep) the store: they load neither the app nor a model. */

function requestPageQuery(values: CliValues, command: string): ApprovalQuery {
  return {
    ...(values.session ? { session: values.session } : {}),
    ...(values.tool ? { tool: values.tool } : {}),
    ...(values.customer ? { customer: values.customer } : {}),
    ...(values.text ? { text: values.text } : {}),
    ...(values.after ? { after: values.after } : {}),
    limit: wholeOption(values.limit, '--limit', CLI_PAGE, command),
  };
}

/**
 * A page as the listing commands print it: the array (--json) or the entries, then how to
 * get the next page: for people a last line, for --json `{"next": …}` on stderr.
 */
function printRequestPage(
  out: Output,
  page: { items: readonly ApprovalView[]; next: string | null },
  command: string,
  values: CliValues,
  empty: string,
): number {
  printList(out, page.items, formatApproval, empty, '\n\n');
  // The cursor is bound to this page's filters: the next page's command repeats them.
  if (page.next !== null)
    printNext(out, again(command, values, ['session', 'tool', 'customer', 'text', 'limit']), page.next);
  return 0;
}

export const pending: Command = async ({ values, context, out }) => {
  const query = toPageQuery({ ...requestPageQuery(values, 'pending'), status: 'pending' }, new Date());
  const page = await (await context.requestBook()).pageRequests(query);
  const at = new Date().toISOString();
  return printRequestPage(
    out,
    { items: page.items.map((row) => toApprovalView(row, at)), next: page.next },
    'pending',
    values,
    'No requests are waiting.',
  );
};

export const history: Command = async ({ values, context, out }) => {
  const query = toPageQuery({ ...requestPageQuery(values, 'history'), decided: true }, new Date());
  const page = await (await context.requestBook()).pageRequests(query);
  const at = new Date().toISOString();
  return printRequestPage(
    out,
    { items: page.items.map((row) => toApprovalView(row, at)), next: page.next },
    'history',
    values,
    'Nothing has been decided yet.',
  );
};

export const show: Command = async ({ args, context, out }) => {
  const view = await showRequest(await context.requestBook(), args[0]!);
  if (out.json) out.data(view);
  else out.print(`${formatApproval(view)}\n  status:  ${view.status}`);
  return 0;
};

const executionStatuses = ['started', 'succeeded', 'failed', 'unknown'];

export const executions: Command = async ({ values, context, out }) => {
  const status = values.status as ExecutionStatus | undefined;
  if (status && !executionStatuses.includes(status)) {
    throw new InvalidInputError(`--status must be started, succeeded, failed or unknown, not ${status}.`, {
      hint: 'For the calls whose outcome needs a person: --status unknown.',
    });
  }
  const limit = wholeOption(values.limit, '--limit', CLI_PAGE, 'executions');
  // The filters the cursor is bound to: the next page's command repeats them.
  const filter = {
    ...(values.session ? { session: values.session } : {}),
    ...(status ? { status } : {}),
  };
  const rows = await listExecutions(await context.store(), {
    ...filter,
    ...(values.after ? { after: decodeExecutionCursor(values.after, filter) } : {}),
    limit: limit + 1,
  });
  const page = rows.slice(0, limit);
  printList(out, page, formatExecution, 'No executions yet.');
  const last = page[page.length - 1];
  if (rows.length > limit && last !== undefined)
    printNext(
      out,
      again('executions', values, ['session', 'status', 'limit']),
      encodeExecutionCursor(last, filter),
    );
  return 0;
};

export const rules: Command = async ({ args, context, out }) => {
  const session = args[0]!;
  const list = await listRules(await context.store(), session);
  return printList(
    out,
    list,
    (r) =>
      `${r.id}  ${r.tool} ${r.argsHash ? `(these arguments, ${r.argsHash.slice(0, 12)}…)` : '(any arguments)'}  by ${r.createdBy} at ${r.createdAt}`,
    `No standing approvals on session ${session}.`,
  );
};

export const revokeRule: Command = async ({ args, values, context, out }) => {
  const rule = await revoke(await context.store(), args[0]!, decider(values));
  if (out.json) out.data(rule);
  else
    out.print(`Revoked ${rule.id} (${rule.tool}) at ${rule.revokedAt}; the next call asks a person again.`);
  return 0;
};

export const expire: Command = async ({ context, out }) => {
  const { expireWorkflowRequests } = await import('./workflow-commands.ts');
  const checkpoints = await context.checkpoints();
  // A file: store keeps workflow runs only: there are no agent requests to expire there.
  const expired = checkpoints.kind === 'file' ? [] : await sweepExpired(await context.store());
  const workflowRequests = await expireWorkflowRequests(checkpoints);
  if (out.json) out.data({ expired, workflowRequests });
  else {
    const lines: string[] = [];
    if (expired.length) lines.push(`Expired ${expired.length}: ${expired.join(', ')}`);
    if (workflowRequests.length)
      lines.push(
        `Expired ${workflowRequests.length} workflow request${workflowRequests.length === 1 ? '' : 's'}: ${workflowRequests
          .map((request) => `${request.requestId} (run ${request.run}, ${request.port})`)
          .join(', ')}`,
      );
    out.print(lines.length ? lines.join('\n') : 'Nothing was overdue.');
  }
  return 0;
};

export const audit: Command = async ({ values, context, out }) => {
  const store = await context.store(values.verify ? { check: 'quick' } : {});
  if (values.verify) {
    const verdict = await verifyAudit(store);
    if (out.json) out.data(verdict);
    else
      out.print(
        verdict.ok
          ? `Audit chain intact: ${verdict.entries} entries${verdict.erased ? ` (${verdict.erased} with their data erased)` : ''}.${verdict.head ? ` Head: #${verdict.head.seq} ${verdict.head.hash} (record it elsewhere to detect truncation).` : ''}`
          : verdict.brokenAt === null
            ? `AUDIT TRAIL INCOMPLETE (${verdict.entries} entries): ${verdict.problem}`
            : `AUDIT CHAIN BROKEN at entry ${verdict.brokenAt}: ${verdict.problem}`,
      );
    return verdict.ok ? 0 : 3;
  }
  const entries = await auditTrail(store, {
    ...(values.session ? { session: values.session } : {}),
    ...(values.after === undefined ? {} : { afterSeq: wholeAfterSeq(values.after) }),
    ...(values.limit === undefined ? {} : { limit: wholeOption(values.limit, '--limit', CLI_PAGE, 'audit') }),
  });
  if (out.json) out.data(entries);
  else out.print(entries.length ? entries.map(formatAudit).join('\n') : 'The audit trail is empty.');
  return 0;
};
