import { CountersignError } from './countersign-error.ts';

/**
 * An edit a person may not make: a field the tool does not declare editable, a change of
 * the tool, or edited arguments the tool's schema refuses. Nothing was decided or run.
 */
export class NotEditableError extends CountersignError {
  override readonly name = 'NotEditableError';
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super('NOT_EDITABLE', message, options);
  }
}
