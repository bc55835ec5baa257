import { CountersignError } from './countersign-error.ts';

export class InvalidInputError extends CountersignError {
  override readonly name = 'InvalidInputError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('INVALID_INPUT', message, options);
  }
}
