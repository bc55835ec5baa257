import { CountersignError } from './countersign-error.ts';

export class StoreUnavailableError extends CountersignError {
  override readonly name = 'StoreUnavailableError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('STORE_UNAVAILABLE', message, options);
  }
}
