import { CountersignError } from './countersign-error.ts';

export class CorruptDataError extends CountersignError {
  override readonly name = 'CorruptDataError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('CORRUPT_DATA', message, options);
  }
}
