import { readableJson } from '../core/canonical-json.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import type { JsonValue } from '../core/json.ts';
import { parseJsonText } from '../core/parse-json.ts';
import type { CheckpointStore } from '../store/checkpoint-store.ts';
import type { RunView } from '../workflow/run-view.ts';
import {
  createWorkflowRunner,
  type ExpiredWorkflowRequest,
  type WorkflowRunner,
} from '../workflow/runner.ts';
import type { CommandInput } from './commands.ts';
import { type CliContext, requireArg } from './context.ts';
import { oneLine } from './format.ts';
import type { Output } from './output.ts';

type Command = (input: CommandInput) => Promise<number | undefined>;

export const workflowUsage = `  run start WORKFLOW INPUT_JSON --run RUN start a workflow run (e.g. run start refund 1040 --run refund-1040)
  run resume RUN [--from CHECKPOINT]      continue a run from its latest (or a given) checkpoint
  run respond RUN REQUEST JSON [--as NAME] answer a request the run waits on
  run history RUN                         the run's checkpoints, each with its parent
  runs                                    workflow runs with their status`;

async function runnerFor(context: CliContext, withWorkflows: boolean): Promise<WorkflowRunner> {
  const checkpoints = await context.checkpoints();
  const workflows = withWorkflows ? ((await context.app()).workflows ?? []) : [];
  return createWorkflowRunner({
    workflows,
    checkpoints,
    bindAgent: async (agent) => agent.with({ store: await context.store(), model: await context.model() }),
  });
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
    lines.push(`    answer: countersign run respond ${view.run} ${request.id} JSON`);
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

function printRun(out: Output, view: RunView): number {
  if (out.json) out.data(view);
  else out.print(formatRunView(view));
  return view.status === 'failed' ? 1 : 0;
}

function answeredBy(values: CommandInput['values']): string {
  return values.as ?? process.env.COUNTERSIGN_APPROVER ?? process.env.USER ?? 'cli';
}

export const workflowCommands: Record<string, Command> = {
  async run({ args, values, context, out }) {
    const [action, ...rest] = args;
    switch (action) {
      case 'start': {
        const usage = 'countersign run start WORKFLOW INPUT_JSON --run RUN';
        const workflow = requireArg(rest[0], usage);
        const input = parseJsonArg(requireArg(rest.slice(1).join(' '), usage), 'INPUT_JSON');
        const run = requireArg(values.run, `${usage} (the run id is required)`);
        return printRun(out, await (await runnerFor(context, true)).start(workflow, run, input));
      }
      case 'resume': {
        const run = requireArg(rest[0], 'countersign run resume RUN [--from CHECKPOINT]');
        const runner = await runnerFor(context, true);
        return printRun(out, await runner.resume(run, values.from ? { from: values.from } : {}));
      }
      case 'respond': {
        const usage = 'countersign run respond RUN REQUEST JSON';
        const run = requireArg(rest[0], usage);
        const request = requireArg(rest[1], usage);
        const response = parseJsonArg(requireArg(rest.slice(2).join(' '), usage), 'The answer');
        const runner = await runnerFor(context, true);
        return printRun(out, await runner.respond(run, request, response, { by: answeredBy(values) }));
      }
      case 'history': {
        const run = requireArg(rest[0], 'countersign run history RUN');
        const history = await (await runnerFor(context, false)).history(run);
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
      }
      default:
        throw new InvalidInputError(
          'Usage: countersign run start WORKFLOW INPUT_JSON --run RUN | run resume RUN | run respond RUN REQUEST JSON | run history RUN',
        );
    }
  },

  async runs({ context, out }) {
    const runs = await (await runnerFor(context, false)).runs();
    if (out.json) out.data(runs);
    else
      out.print(
        runs.length
          ? runs
              .map(
                (run) =>
                  `${run.run}  ${run.workflow} v${run.version}  ${run.status.padEnd(14)} ${run.updatedAt}`,
              )
              .join('\n')
          : 'No workflow runs yet.',
      );
    return 0;
  },
};
