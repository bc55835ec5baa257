import { CountersignError } from './countersign-error.ts';

export class SessionBusyError extends CountersignError {
  override readonly name = 'SessionBusyError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('SESSION_BUSY', message, options);
  }
}
