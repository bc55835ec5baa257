import { CountersignError } from './countersign-error.ts';

export class IntegrityViolationError extends CountersignError {
  override readonly name = 'IntegrityViolationError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('INTEGRITY_VIOLATION', message, options);
  }
}
