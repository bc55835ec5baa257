import { CountersignError } from './countersign-error.ts';

export class ConfigError extends CountersignError {
  override readonly name = 'ConfigError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('CONFIG_ERROR', message, options);
  }
}
