/**
 * What edges connect. `accepts` and `emits` exist only for the type checker: an edge from
 * a node emitting T to one accepting U compiles only when T is assignable to U.
 */
export interface WorkflowNode<I, O> {
  readonly id: string;
  readonly kind: 'executor' | 'port';
  readonly accepts?: (message: I) => void;
  readonly emits?: O;
}

/** Executor and port ids are part of a checkpoint's contract: short, stable, file-name safe. */
export const nodeIdPattern = /^[A-Za-z][A-Za-z0-9._-]{0,63}$/;
