import { NotFoundError } from '../../core/errors/not-found-error.ts';
import type { CheckpointStore } from '../../store/checkpoint-store.ts';
import { restoreRunState } from '../../workflow/compatibility.ts';
import type { Workflow } from '../../workflow/define-workflow.ts';
import { type RunView, toRunView } from '../../workflow/run-view.ts';
import type { WorkflowRunner } from '../../workflow/runner.ts';

/** What the server does with workflow runs: the runner, plus reads it does not offer. */
export interface WorkflowDesk {
  runner: WorkflowRunner;
  /** Where the runs live (and, when it keeps them, their port requests). */
  checkpoints: CheckpointStore;
  /** A run where it stands now, without continuing it. */
  view(run: string): Promise<RunView>;
}

export function createWorkflowDesk(options: {
  runner: WorkflowRunner;
  workflows: readonly Workflow[];
  checkpoints: CheckpointStore;
}): WorkflowDesk {
  const { runner, checkpoints } = options;
  const byName = new Map(options.workflows.map((workflow) => [workflow.name, workflow]));

  const latestState = async (run: string) => {
    const latest = await checkpoints.latestCheckpoint(run);
    if (!latest) return null;
    const workflow = byName.get(latest.workflow);
    if (!workflow) return null;
    return { latest, workflow, state: restoreRunState(workflow, latest) };
  };

  return {
    runner,
    checkpoints,
    async view(run) {
      const found = await latestState(run);
      if (!found) throw new NotFoundError(`There is no run ${run} of a workflow this server runs.`);
      return toRunView(found.latest, found.state);
    },
  };
}
