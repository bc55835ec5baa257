import { CountersignError } from './countersign-error.ts';

/**
 * A stored checkpoint does not fit the workflow code that tries to resume it. `node` names
 * the executor or request port and `field` the payload field (a dotted path) at fault, so
 * whoever deployed the change can tell which contract they broke.
 */
export class CheckpointIncompatibleError extends CountersignError {
  override readonly name = 'CheckpointIncompatibleError';
  readonly node: string | null;
  readonly field: string | null;
  constructor(
    message: string,
    details: { node?: string | null; field?: string | null; hint?: string; cause?: unknown } = {},
  ) {
    super('CHECKPOINT_INCOMPATIBLE', message, {
      hint:
        details.hint ??
        'Resume it with the workflow version that wrote it, or register a migration from that version.',
      cause: details.cause,
    });
    this.node = details.node ?? null;
    this.field = details.field ?? null;
  }
}
