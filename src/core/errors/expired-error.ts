import { CountersignError } from './countersign-error.ts';

export class ExpiredError extends CountersignError {
  override readonly name = 'ExpiredError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('EXPIRED', message, options);
  }
}
