import type { z } from 'zod';
import { CheckpointIncompatibleError } from '../core/errors/checkpoint-incompatible-error.ts';
import type { JsonValue } from '../core/json.ts';
import type { StoredCheckpoint } from '../store/checkpoint-store.ts';
import type { AnyNode, Workflow } from './define-workflow.ts';
import { decodeCheckpointBody, type WorkflowRunState } from './run-state.ts';
import { describeIssue } from './schema-hash.ts';

/**
 * Rebuilds a run's state from a checkpoint for the workflow code running now.
 *
 * Same version and same schema hashes: the state is used as it is. Otherwise, registered
 * migrations upgrade it step by step; then every payload still in flight (messages,
 * requests, executor state) is checked against today's schemas. An added optional field
 * passes; a removed executor or port, or a payload that no longer fits (a required field
 * added, renamed or retyped), fails with CHECKPOINT_INCOMPATIBLE naming the node and field.
 */
export function restoreRunState(workflow: Workflow, checkpoint: StoredCheckpoint): WorkflowRunState {
  const where = `Checkpoint ${checkpoint.id} of run ${checkpoint.run}`;
  const body = decodeCheckpointBody(checkpoint.body, where);
  const written = `${checkpoint.workflow} v${checkpoint.version}`;
  const current = `${workflow.name} v${workflow.version}`;
  const incompatible = (detail: string, node: string | null = null, field: string | null = null) =>
    new CheckpointIncompatibleError(
      `${where} (written by ${written}) cannot be resumed by ${current}: ${detail}.`,
      {
        node,
        field,
      },
    );

  if (checkpoint.workflow !== workflow.name) throw incompatible('it belongs to another workflow');
  if (checkpoint.version > workflow.version) {
    throw incompatible('it was written by a newer version', null, null);
  }

  let state = body.state;
  let migrated = false;
  let version = checkpoint.version;
  while (version < workflow.version) {
    const migration = workflow.migrations.find((candidate) => candidate.from === version);
    if (migration === undefined) break;
    try {
      state = migration.upgrade(structuredClone(state));
    } catch (cause) {
      throw new CheckpointIncompatibleError(
        `${where}: the migration from v${migration.from} to v${migration.to} of ${workflow.name} failed: ${(cause as Error).message}.`,
        { cause },
      );
    }
    version = migration.to;
    migrated = true;
  }

  const unchanged =
    !migrated &&
    checkpoint.version === workflow.version &&
    Object.entries(body.contract.nodes).every(([id, recorded]) => {
      const now = workflow.contract.nodes[id];
      return now !== undefined && now.kind === recorded.kind && sameSchemas(now.schemas, recorded.schemas);
    });
  if (unchanged) return state;

  // Without a migration, every node the old version had is part of the contract the run was
  // started under: its removal is incompatible even if nothing is in flight for it right now.
  if (!migrated) {
    for (const [id, recorded] of Object.entries(body.contract.nodes)) {
      const now = workflow.nodes.get(id);
      if (now === undefined) {
        throw incompatible(`${recorded.kind} "${id}" no longer exists`, id);
      }
      if (now.kind !== recorded.kind) {
        throw incompatible(`"${id}" was ${article(recorded.kind)} and is now ${article(now.kind)}`, id);
      }
    }
  }

  const node = (id: string, what: string): AnyNode => {
    const found = workflow.nodes.get(id);
    if (found === undefined) throw incompatible(`${what} refers to "${id}", which no longer exists`, id);
    return found;
  };
  const check = (schema: z.ZodType | undefined, value: JsonValue, id: string, what: string): JsonValue => {
    if (schema === undefined) return value;
    const parsed = schema.safeParse(value);
    if (parsed.success) return value;
    const { field, detail } = describeIssue(parsed.error);
    throw incompatible(`${what} no longer fits: ${detail}`, id, field);
  };

  for (const message of state.messages) {
    const target = node(message.to, 'a pending message');
    if (target.kind !== 'executor')
      throw incompatible(`a pending message goes to port "${target.id}"`, target.id);
    if (message.answer?.reply === true) {
      if (workflow.portOwners.get(message.answer.port) !== target.id) {
        throw incompatible(
          `executor "${target.id}" no longer asks on port "${message.answer.port}"`,
          target.id,
        );
      }
      const port = node(message.answer.port, 'an answer');
      if (port.kind === 'port')
        check(
          port.response,
          message.payload,
          port.id,
          `the answer to request ${message.answer.requestId} on port "${port.id}"`,
        );
    } else {
      check(target.input, message.payload, target.id, `the message pending for executor "${target.id}"`);
    }
  }
  for (const request of state.requests) {
    const port = node(request.port, `request ${request.id}`);
    if (port.kind !== 'port')
      throw incompatible(`request ${request.id} is on "${port.id}", now an executor`, port.id);
    check(port.request, request.data, port.id, `the data of request ${request.id} on port "${port.id}"`);
    if (request.askedBy !== null && workflow.portOwners.get(port.id) !== request.askedBy) {
      throw incompatible(
        `port "${port.id}" no longer belongs to executor "${request.askedBy}"`,
        request.askedBy,
      );
    }
  }
  for (const [id, value] of Object.entries(state.executors)) {
    const executor = node(id, 'stored executor state');
    if (executor.kind === 'executor') check(executor.state, value, id, `the state of executor "${id}"`);
  }
  for (const [edgeId, buffers] of Object.entries(state.fanIn)) {
    const edge = workflow.edges.find((candidate) => candidate.id === edgeId);
    if (edge === undefined || edge.kind !== 'fan-in') {
      if (Object.values(buffers).some((messages) => messages.length > 0)) {
        throw incompatible(`the fan-in "${edgeId}" holding messages no longer exists`, edgeId);
      }
      continue;
    }
    for (const [source, messages] of Object.entries(buffers)) {
      const sender = node(source, `the fan-in "${edgeId}"`);
      for (const message of messages) {
        if (sender.kind === 'executor')
          check(sender.output, message, source, `a message of "${source}" waiting in the fan-in "${edgeId}"`);
      }
    }
  }
  return state;
}

function sameSchemas(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of keys) if (a[key] !== b[key]) return false;
  return true;
}

function article(kind: 'executor' | 'port'): string {
  return kind === 'executor' ? 'an executor' : 'a port';
}
