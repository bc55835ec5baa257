import { CountersignError } from './countersign-error.ts';

export class ModelCallError extends CountersignError {
  override readonly name = 'ModelCallError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('MODEL_ERROR', message, options);
  }
}
