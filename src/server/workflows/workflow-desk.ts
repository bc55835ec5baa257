import { z } from 'zod';
import { NotFoundError } from '../../core/errors/not-found-error.ts';
import type { JsonValue } from '../../core/json.ts';
import type { CheckpointStore } from '../../store/checkpoint-store.ts';
import { restoreRunState } from '../../workflow/compatibility.ts';
import type { Workflow } from '../../workflow/define-workflow.ts';
import { portRole } from '../../workflow/port-role.ts';
import { type RunView, toRunView } from '../../workflow/run-view.ts';
import type { WorkflowRunner } from '../../workflow/runner.ts';
import type { Identity } from '../auth/identity.ts';

/** A workflow request waiting at a port, as the inbox lists it beside tool calls. */
export interface PortRequestView {
  run: string;
  workflow: string;
  id: string;
  port: string;
  data: JsonValue;
  createdAt: string;
  /** When it stops taking answers (null: a request from before requests expired; never). */
  expiresAt: string | null;
  /** The role an answer needs (the port's `role`); null when any approver may answer. */
  requiredRole: string | null;
  /** The port's answer schema, as JSON Schema, so a form can be drawn for it. */
  responseSchema: Record<string, unknown>;
}

/** What the server does with workflow runs: the runner, plus reads it does not offer. */
export interface WorkflowDesk {
  runner: WorkflowRunner;
  /** A run where it stands now, without continuing it. */
  view(run: string): Promise<RunView>;
  /** Requests waiting at ports across all runs, oldest first; none past its expiry. */
  pendingRequests(): Promise<PortRequestView[]>;
  /** Answers a port request as `identity`, if decision-rights.ts lets them. */
  respond(identity: Identity, run: string, requestId: string, response: JsonValue): Promise<RunView>;
}

export function createWorkflowDesk(options: {
  runner: WorkflowRunner;
  workflows: readonly Workflow[];
  checkpoints: CheckpointStore;
  portRoles: Record<string, string>;
  now?: () => Date;
}): WorkflowDesk {
  const { runner, checkpoints, portRoles } = options;
  const now = options.now ?? (() => new Date());
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
    async view(run) {
      const found = await latestState(run);
      if (!found) throw new NotFoundError(`There is no run ${run} of a workflow this server runs.`);
      return toRunView(found.latest, found.state);
    },
    async pendingRequests() {
      const out: PortRequestView[] = [];
      const at = now().toISOString();
      for (const summary of await runner.runs()) {
        if (summary.status !== 'awaiting_input') continue;
        const found = await latestState(summary.run).catch(() => null);
        if (!found) continue;
        for (const request of found.state.requests) {
          // An agent's call the run waits on is listed once, as the tool call it is.
          if (request.toolCall === true) continue;
          // Past its expiry it takes no answer: the store watcher records the expiry.
          if (request.expiresAt !== null && request.expiresAt <= at) continue;
          const node = found.workflow.nodes.get(request.port);
          const schema =
            node?.kind === 'port'
              ? (z.toJSONSchema(node.response, { target: 'draft-7', io: 'input' }) as Record<string, unknown>)
              : {};
          out.push({
            run: summary.run,
            workflow: summary.workflow,
            id: request.id,
            port: request.port,
            data: request.data,
            createdAt: request.createdAt,
            expiresAt: request.expiresAt,
            requiredRole: portRole(found.workflow, request.port, portRoles),
            responseSchema: schema,
          });
        }
      }
      return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    },
    respond(identity, run, requestId, response) {
      // Who may answer (the port's role, never the raiser or the customer) is the runner's rule.
      return runner.respond(run, requestId, response, { by: identity.name, roles: identity.roles });
    },
  };
}
