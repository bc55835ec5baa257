import { z } from 'zod';
import type { CheckpointStore } from '../../src/store/checkpoint-store.ts';
import { createMemoryCheckpointStore } from '../../src/store/memory/memory-checkpoint-store.ts';
import { defineWorkflow, type Workflow } from '../../src/workflow/define-workflow.ts';
import { executor } from '../../src/workflow/executor.ts';
import { requestPort } from '../../src/workflow/request-port.ts';
import { decodeCheckpointBody, type WorkflowRunState } from '../../src/workflow/run-state.ts';
import { createWorkflowRunner, type WorkflowRunnerOptions } from '../../src/workflow/runner.ts';

/** A runner on a memory store unless one is given; `calls` counts executor invocations by id. */
export function harness(workflows: Workflow[], options: Partial<WorkflowRunnerOptions> = {}) {
  const checkpoints: CheckpointStore = options.checkpoints ?? createMemoryCheckpointStore();
  const runner = createWorkflowRunner({ workflows, checkpoints, ...options });
  return { checkpoints, runner };
}

export async function stateOf(
  checkpoints: CheckpointStore,
  run: string,
  id?: string,
): Promise<WorkflowRunState> {
  const checkpoint = id ? await checkpoints.getCheckpoint(run, id) : await checkpoints.latestCheckpoint(run);
  if (checkpoint === null) throw new Error(`no checkpoint ${id ?? 'latest'} of ${run}`);
  return decodeCheckpointBody(checkpoint.body, checkpoint.id).state;
}

/** Every checkpoint's parent is the one before it in the history (for runs without branches). */
export function expectLinearChain(
  history: Array<{ checkpointId: string; parentCheckpointId: string | null }>,
) {
  history.forEach((entry, i) => {
    if (entry.parentCheckpointId !== (i === 0 ? null : history[i - 1]!.checkpointId)) {
      throw new Error(`checkpoint ${i} (${entry.checkpointId}) has parent ${entry.parentCheckpointId}`);
    }
  });
}

/**
 * Two reviewers asked in parallel (fan-out to two executors that each ask on their own
 * port), their verdicts joined by a fan-in: the fan-in must hold the first verdict across
 * checkpoints while the second reviewer has not answered.
 */
export function reviewWorkflow(log: string[] = []) {
  const verdict = z.object({ reviewer: z.string(), ok: z.boolean() });
  const legalPort = requestPort('legal-review', {
    request: z.object({ doc: z.string() }),
    response: z.object({ ok: z.boolean() }),
  });
  const financePort = requestPort('finance-review', {
    request: z.object({ doc: z.string() }),
    response: z.object({ ok: z.boolean() }),
  });
  const submit = executor({
    id: 'submit',
    input: z.string(),
    output: z.object({ doc: z.string() }),
    handle: (doc) => {
      log.push('submit');
      return { doc };
    },
  });
  const legal = executor({
    id: 'legal',
    input: z.object({ doc: z.string() }),
    output: verdict,
    handle: () => {
      log.push('legal');
      return { reviewer: 'legal', ok: true };
    },
  });
  const finance = executor({
    id: 'finance',
    input: z.object({ ok: z.boolean() }),
    output: verdict,
    handle: (answer, ctx) => {
      log.push(`finance:${financePort.requestOf(ctx).doc}`);
      return { reviewer: 'finance', ok: answer.ok };
    },
  });
  const join = executor({
    id: 'join',
    input: z.array(verdict),
    output: z.string(),
    handle: (verdicts) => {
      log.push('join');
      return verdicts.every((v) => v.ok)
        ? `approved by ${verdicts.map((v) => v.reviewer).join(' and ')}`
        : 'rejected';
    },
  });
  const legalGate = executor({
    id: 'legal-gate',
    input: z.object({ ok: z.boolean() }),
    output: z.object({ doc: z.string() }),
    handle: (answer, ctx) => ({
      doc: `${legalPort.requestOf(ctx).doc}${answer.ok ? '' : ' (legal said no)'}`,
    }),
  });
  return defineWorkflow({ name: 'review', version: 1 })
    .start(submit)
    .fanOut(submit, [legalPort, financePort])
    .edge(legalPort, legalGate)
    .edge(legalGate, legal)
    .edge(financePort, finance)
    .fanIn([legal, finance], join)
    .output(join)
    .build();
}
