import { CountersignError } from './countersign-error.ts';

export class StepLimitError extends CountersignError {
  override readonly name = 'StepLimitError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('STEP_LIMIT', message, options);
  }
}
