import { CountersignError } from './countersign-error.ts';

export class OutcomeUnknownError extends CountersignError {
  override readonly name = 'OutcomeUnknownError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('OUTCOME_UNKNOWN', message, options);
  }
}
