import { CountersignError } from './countersign-error.ts';

export class NotFoundError extends CountersignError {
  override readonly name = 'NotFoundError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('NOT_FOUND', message, options);
  }
}
