import { CountersignError } from './countersign-error.ts';

export class ForbiddenError extends CountersignError {
  override readonly name = 'ForbiddenError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('FORBIDDEN', message, options);
  }
}
