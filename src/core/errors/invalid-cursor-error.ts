import { CountersignError } from './countersign-error.ts';

/**
 * A page cursor that this listing did not hand out: mangled, cut, or from another sort. The
 * caller starts again from the first page (no `after`), which is always safe.
 */
export class InvalidCursorError extends CountersignError {
  override readonly name = 'InvalidCursorError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('INVALID_CURSOR', message, {
      hint:
        options.hint ??
        'Pass the `next` value of the previous page as it was, or leave `after` out to start again.',
      cause: options.cause,
    });
  }
}
