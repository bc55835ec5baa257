import { readableJson } from '../core/canonical-json.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import type { JsonValue } from '../core/json.ts';
import { parseJsonText } from '../core/parse-json.ts';
import type { RequestDecision } from '../requests/request-desk.ts';
import { assertStoreId } from '../store/checkpoint-rules.ts';
import {
  type CheckpointStore,
  RUN_STATUSES,
  type RunPageQuery,
  type RunSort,
  type RunStatus,
} from '../store/checkpoint-store.ts';
import { RUN_SORTS } from '../store/run-page.ts';
import type { RunView } from '../workflow/run-view.ts';
import {
  createWorkflowRunner,
  type ExpiredWorkflowRequest,
  type WorkflowRunner,
} from '../workflow/runner.ts';
import type { Command } from './command-input.ts';
import type { CliValues } from './command-table.ts';
import type { CliContext } from './context.ts';
import { decider } from './decider.ts';
import { oneLine } from './format.ts';
import { type Output, printList } from './output.ts';
import { again, CLI_PAGE, printNext, wholeOption } from './paging.ts';

function runnerFor(context: CliContext, withWorkflows: boolean): Promise<WorkflowRunner> {
  return context.runner(withWorkflows);
}

/**
 * `countersign expire` for workflow runs: records the expiry of every overdue request, without
 * the app (expiry reads checkpoints as stored) and without continuing the runs.
 */
export function expireWorkflowRequests(checkpoints: CheckpointStore): Promise<ExpiredWorkflowRequest[]> {
  return createWorkflowRunner({ workflows: [], checkpoints }).expire();
}

function parseJsonArg(text: string, what: string): JsonValue {
  return parseJsonText(text, what, {
    hint: `Quote it for the shell, e.g. '{"approved": true, "note": "Photo checked."}' or 1040.`,
  });
}

function formatRunView(view: RunView): string {
  const lines = [
    `Run ${view.run} (${view.workflow} v${view.version}): ${view.status}   checkpoint ${view.checkpoint}`,
  ];
  for (const request of view.requests) {
    lines.push(
      `  waiting on ${request.port}: request ${request.id} since ${request.createdAt}${request.expiresAt === null ? '' : `, expires ${request.expiresAt}`}`,
    );
    lines.push(`    data: ${readableJson(request.data)}`);
    lines.push(`    answer: countersign answer ${request.id} JSON (or approve / reject it)`);
  }
  for (const expired of view.expired ?? []) {
    lines.push(
      `  expired on ${expired.port}: request ${expired.requestId} got no answer by ${expired.expiresAt}; that branch ended`,
    );
  }
  for (const output of view.outputs) {
    lines.push(`  output: ${typeof output === 'string' ? oneLine(output) : readableJson(output)}`);
  }
  if (view.error) {
    lines.push(
      `  failed${view.error.executor ? ` in ${view.error.executor}` : ''}: ${view.error.code} ${oneLine(view.error.message)}`,
    );
    lines.push(`    retry: countersign run resume ${view.run}`);
  }
  return lines.join('\n');
}

export function printRun(out: Output, view: RunView): number {
  if (out.json) out.data(view);
  else out.print(formatRunView(view));
  return view.status === 'failed' ? 1 : 0;
}

export const runStart: Command = async ({ args, values, context, out }) => {
  if (!values.run)
    throw new InvalidInputError('A new run needs its id: --run RUN.', {
      hint: `Name it after what it is about, e.g. countersign run start ${args[0]} ${args.slice(1).join(' ')} --run ${args[0]}-1.`,
    });
  const input = parseJsonArg(args.slice(1).join(' '), 'INPUT_JSON');
  const runner = await runnerFor(context, true);
  return printRun(
    out,
    await runner.start(args[0]!, values.run, input, {
      by: decider(values),
      ...(values.user === undefined ? {} : { customer: values.user }),
    }),
  );
};

export const runResume: Command = async ({ args, values, context, out }) => {
  const runner = await runnerFor(context, true);
  return printRun(out, await runner.resume(args[0]!, values.from ? { from: values.from } : {}));
};

export const runRespond: Command = async ({ args, values, context, out }) => {
  const response = parseJsonArg(args.slice(2).join(' '), 'The answer');
  // Ids that could never be stored are refused as such, before anything is looked up.
  assertStoreId('run', args[0]!);
  assertStoreId('request', args[1]!);
  const request = await context.request(args[1]!);
  if (request.run !== args[0])
    throw new NotFoundError(`Run ${args[0]} has no request ${args[1]}.`, {
      hint: `See what it waits on with \`countersign pending\`; answer with \`countersign answer ${args[1]} JSON\`.`,
    });
  return answer(context, request.id, { response }, values, out);
};

/** `answer REQUEST JSON`: a workflow request's answer, by the request's id alone. */
export const answerCommand: Command = async ({ args, values, context, out }) => {
  const response = parseJsonArg(args.slice(1).join(' '), 'The answer');
  return answer(context, args[0]!, { response }, values, out);
};

/**
 * A decision on a workflow request (an answer, or approve/reject on an approval-shaped port),
 * through the one decide path; prints the run where it now stands.
 */
export async function answer(
  context: CliContext,
  id: string,
  decision: RequestDecision,
  values: CliValues,
  out: Output,
): Promise<number> {
  const desk = await context.requestDesk();
  const outcome = await desk.decide(id, decision, { by: decider(values) });
  if (outcome.run) return printRun(out, outcome.run);
  const request = await outcome.request();
  if (out.json) out.data(request);
  else out.print(`Request ${id}: ${request.status}.`);
  return 0;
}

export const runHistory: Command = async ({ args, context, out }) => {
  const history = await (await runnerFor(context, false)).history(args[0]!);
  if (out.json) out.data(history);
  else
    out.print(
      history
        .map(
          (entry) =>
            `${entry.checkpointId}  superstep ${entry.superstep}  ${entry.createdAt}  parent ${entry.parentCheckpointId ?? '-'}`,
        )
        .join('\n'),
    );
  return 0;
};

const runSorts: readonly string[] = RUN_SORTS;
const runStatuses: readonly string[] = RUN_STATUSES;

/** `runs`: one page of runs, newest first, with the filters as given (all exact). */
export const runs: Command = async ({ values, context, out }) => {
  if (values.status !== undefined && !runStatuses.includes(values.status))
    throw new InvalidInputError(`--status must be ${RUN_STATUSES.join(', ')}, not ${values.status}.`, {
      hint: 'For the runs that wait for a person: --status awaiting_input.',
    });
  if (values.sort !== undefined && !runSorts.includes(values.sort))
    throw new InvalidInputError(`--sort must be ${RUN_SORTS.join(' or ')}, not ${values.sort}.`);
  const query: RunPageQuery = {
    ...(values.status ? { status: values.status as RunStatus } : {}),
    ...(values.workflow ? { workflow: values.workflow } : {}),
    ...(values.customer ? { customer: values.customer } : {}),
    ...(values.sort ? { sort: values.sort as RunSort } : {}),
    ...(values.after ? { after: values.after } : {}),
    limit: wholeOption(values.limit, '--limit', CLI_PAGE, 'runs'),
  };
  const page = await (await runnerFor(context, false)).pageRuns(query);
  printList(
    out,
    page.items,
    (run) =>
      `${run.run}  ${run.workflow} v${run.version}  ${run.status.padEnd(14)} ${run.updatedAt}${run.customer === null ? '' : `  for ${run.customer}`}`,
    values.status || values.workflow || values.customer ? 'No runs match.' : 'No workflow runs yet.',
  );
  // The next page is the same listing: its filters (the cursor is bound to them), sort and size.
  if (page.next !== null)
    printNext(out, again('runs', values, ['status', 'workflow', 'customer', 'sort', 'limit']), page.next);
  return 0;
};
