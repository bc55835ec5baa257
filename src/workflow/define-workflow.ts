import type { z } from 'zod';
import { ConfigError } from '../core/errors/config-error.ts';
import type { AnyRequestPort, Executor } from './executor.ts';
import type { RequestPort } from './request-port.ts';
import type { WorkflowRunState } from './run-state.ts';
import { schemaHash } from './schema-hash.ts';
import type { WorkflowNode } from './workflow-node.ts';

/** The runtime view of nodes; the typed views exist for building edges. */
export type AnyExecutor = Executor<unknown, unknown, unknown>;
export type AnyPort = RequestPort<unknown, unknown>;
export type AnyNode = AnyExecutor | AnyPort;

export type WorkflowEdge =
  | { kind: 'direct'; id: string; from: string; to: string; when?: (message: unknown) => boolean }
  | {
      kind: 'fan-out';
      id: string;
      from: string;
      to: readonly string[];
      select?: (message: unknown, targets: readonly string[]) => readonly string[];
    }
  | { kind: 'fan-in'; id: string; from: readonly string[]; to: string };

/** What a checkpoint records about the code that wrote it: node ids and payload schema hashes. */
export interface WorkflowContract {
  nodes: Record<string, { kind: 'executor' | 'port'; schemas: Record<string, string> }>;
}

/** Upgrades the state of runs written by version `from` to version `to`. */
export interface WorkflowMigration {
  from: number;
  to: number;
  upgrade(state: WorkflowRunState): WorkflowRunState;
}

export interface Workflow<In = unknown> {
  readonly name: string;
  readonly version: number;
  /** Namespace of the application state its executors see (`ctx.state`). */
  readonly stateNamespace: string;
  readonly start: string;
  readonly nodes: ReadonlyMap<string, AnyNode>;
  readonly edges: readonly WorkflowEdge[];
  /** Executors whose returned messages are also workflow outputs. */
  readonly outputs: ReadonlySet<string>;
  readonly migrations: readonly WorkflowMigration[];
  readonly contract: WorkflowContract;
  /** The port that owns a request raised with `ctx.request` lists its executor here. */
  readonly portOwners: ReadonlyMap<string, string>;
  /** Type-level only: the run input. */
  readonly input?: In;
}

export interface WorkflowBuilder<In> {
  /** The executor the run's input is delivered to, in the first superstep. */
  start<I>(node: Executor<I, unknown, unknown> | WorkflowNode<I, unknown>): WorkflowBuilder<I>;
  /** Every message `from` sends goes to `to` (only those passing `when`, if given). */
  edge<T>(
    from: WorkflowNode<never, T>,
    to: WorkflowNode<T, unknown>,
    options?: { when?: (message: T) => boolean },
  ): WorkflowBuilder<In>;
  /** Every message goes to each target (or to those `select` names). */
  fanOut<T>(
    from: WorkflowNode<never, T>,
    to: readonly WorkflowNode<T, unknown>[],
    options?: { select?: (message: T, targets: readonly string[]) => readonly string[] },
  ): WorkflowBuilder<In>;
  /** Waits for one message from every source, then delivers them together, in source order. */
  fanIn<T>(from: readonly WorkflowNode<never, T>[], to: WorkflowNode<T[], unknown>): WorkflowBuilder<In>;
  /** What this executor returns is also an output of the workflow. */
  output(node: WorkflowNode<never, unknown>): WorkflowBuilder<In>;
  /** Lets runs waiting under an older version continue under this one. */
  migration(migration: WorkflowMigration): WorkflowBuilder<In>;
  build(): Workflow<In>;
}

const workflowNamePattern = /^[A-Za-z][A-Za-z0-9._-]{0,63}$/;

export function defineWorkflow(options: {
  name: string;
  version: number;
  stateNamespace?: string;
}): WorkflowBuilder<unknown> {
  if (!workflowNamePattern.test(options.name)) {
    throw new ConfigError(
      `Workflow name "${options.name}" must start with a letter and use letters, digits, . _ -.`,
    );
  }
  if (!Number.isSafeInteger(options.version) || options.version < 1) {
    throw new ConfigError(`Workflow ${options.name} has version ${options.version}; use a positive integer.`);
  }
  const where = `workflow ${options.name} v${options.version}`;
  const nodes = new Map<string, AnyNode>();
  const edges: WorkflowEdge[] = [];
  const outputs = new Set<string>();
  const migrations: WorkflowMigration[] = [];
  const portOwners = new Map<string, string>();
  let start: string | undefined;

  function register(node: WorkflowNode<unknown, unknown> | AnyRequestPort): AnyNode {
    const runtime = node as unknown as AnyNode;
    const existing = nodes.get(runtime.id);
    if (existing !== undefined && existing !== runtime) {
      throw new ConfigError(`Two different nodes of ${where} have the id ${runtime.id}.`);
    }
    if (existing === undefined) {
      nodes.set(runtime.id, runtime);
      if (runtime.kind === 'executor') {
        for (const port of runtime.ports) {
          const owner = portOwners.get(port.id);
          if (owner !== undefined && owner !== runtime.id) {
            throw new ConfigError(`Port ${port.id} of ${where} is owned by both ${owner} and ${runtime.id}.`);
          }
          portOwners.set(port.id, runtime.id);
          register(port);
        }
      }
    }
    return runtime;
  }

  function executorNode(node: WorkflowNode<unknown, unknown>, role: string): AnyExecutor {
    const runtime = register(node);
    if (runtime.kind !== 'executor')
      throw new ConfigError(`${role} of ${where} must be an executor, not port ${runtime.id}.`);
    return runtime;
  }

  const builder: WorkflowBuilder<unknown> = {
    start(node) {
      start = executorNode(node as WorkflowNode<unknown, unknown>, 'The start').id;
      return builder as WorkflowBuilder<never>;
    },
    edge(from, to, edgeOptions = {}) {
      const source = register(from as WorkflowNode<unknown, unknown>);
      const target = register(to as WorkflowNode<unknown, unknown>);
      if (source.kind === 'port' && target.kind === 'port') {
        throw new ConfigError(`An edge of ${where} joins port ${source.id} to port ${target.id}.`);
      }
      const when = edgeOptions.when as ((message: unknown) => boolean) | undefined;
      edges.push({
        kind: 'direct',
        id: `${source.id}->${target.id}`,
        from: source.id,
        to: target.id,
        ...(when ? { when } : {}),
      });
      return builder;
    },
    fanOut(from, to, edgeOptions = {}) {
      const source = executorNode(from as WorkflowNode<unknown, unknown>, 'A fan-out source');
      const targets = to.map((node) => register(node as WorkflowNode<unknown, unknown>).id);
      if (targets.length < 2 || new Set(targets).size !== targets.length) {
        throw new ConfigError(
          `The fan-out from ${source.id} in ${where} needs two or more distinct targets.`,
        );
      }
      const select = edgeOptions.select as
        | ((message: unknown, targets: readonly string[]) => readonly string[])
        | undefined;
      edges.push({
        kind: 'fan-out',
        id: `${source.id}->[${targets.join(',')}]`,
        from: source.id,
        to: targets,
        ...(select ? { select } : {}),
      });
      return builder;
    },
    fanIn(from, to) {
      const sources = from.map(
        (node) => executorNode(node as WorkflowNode<unknown, unknown>, 'A fan-in source').id,
      );
      const target = executorNode(to as WorkflowNode<unknown, unknown>, 'A fan-in target');
      if (sources.length < 2 || new Set(sources).size !== sources.length) {
        throw new ConfigError(`The fan-in into ${target.id} in ${where} needs two or more distinct sources.`);
      }
      edges.push({
        kind: 'fan-in',
        id: `[${sources.join(',')}]->${target.id}`,
        from: sources,
        to: target.id,
      });
      return builder;
    },
    output(node) {
      outputs.add(executorNode(node as WorkflowNode<unknown, unknown>, 'An output').id);
      return builder;
    },
    migration(migration) {
      if (
        !Number.isSafeInteger(migration.from) ||
        !Number.isSafeInteger(migration.to) ||
        migration.from < 1 ||
        migration.from >= migration.to ||
        migration.to > options.version
      ) {
        throw new ConfigError(
          `A migration of ${where} goes from ${migration.from} to ${migration.to}; it must go up, to at most ${options.version}.`,
        );
      }
      if (migrations.some((other) => other.from === migration.from)) {
        throw new ConfigError(`${where} has two migrations from version ${migration.from}.`);
      }
      migrations.push(migration);
      return builder;
    },
    build() {
      if (start === undefined) throw new ConfigError(`${where} has no start executor.`);
      for (const node of nodes.values()) {
        if (node.kind !== 'port') continue;
        const owned = portOwners.has(node.id);
        const onward = edges.some((edge) => edge.from === node.id);
        if (owned && onward) {
          throw new ConfigError(
            `Port ${node.id} of ${where} belongs to executor ${portOwners.get(node.id)} and also has edges.`,
          );
        }
        if (!owned && !onward) {
          throw new ConfigError(`Port ${node.id} of ${where} has no edge for its answers to travel on.`);
        }
      }
      const contract: WorkflowContract = { nodes: {} };
      for (const node of [...nodes.values()].sort((a, b) => (a.id < b.id ? -1 : 1))) {
        const schemas: Record<string, string> = {};
        const add = (name: string, schema: z.ZodType | undefined) => {
          if (schema !== undefined) schemas[name] = schemaHash(schema);
        };
        if (node.kind === 'executor') {
          add('input', node.input);
          add('output', node.output);
          add('state', node.state);
        } else {
          add('request', node.request);
          add('response', node.response);
        }
        contract.nodes[node.id] = { kind: node.kind, schemas };
      }
      return {
        name: options.name,
        version: options.version,
        stateNamespace: options.stateNamespace ?? options.name,
        start,
        nodes: new Map(nodes),
        edges: [...edges],
        outputs: new Set(outputs),
        migrations: [...migrations].sort((a, b) => a.from - b.from),
        contract,
        portOwners: new Map(portOwners),
      };
    },
  };
  return builder;
}
