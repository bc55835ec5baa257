/**
 * Stable error codes. Callers (CLI, HTTP, tests) switch on these, never on messages,
 * so a code once published is never renamed.
 */
export type ErrorCode =
  | 'NOT_FOUND'
  | 'ALREADY_DECIDED'
  | 'EXPIRED'
  | 'INVALID_INPUT'
  | 'INVALID_CURSOR'
  | 'FORBIDDEN'
  | 'SESSION_BUSY'
  | 'STEP_LIMIT'
  | 'MODEL_ERROR'
  | 'STORE_UNAVAILABLE'
  | 'CORRUPT_DATA'
  | 'INTEGRITY_VIOLATION'
  | 'OUTCOME_UNKNOWN'
  | 'CONFIG_ERROR'
  | 'CHECKPOINT_INCOMPATIBLE'
  | 'NOT_EDITABLE'
  /** Someone else holds the request's claim (claiming only; deciding never needs a claim). */
  | 'CLAIMED';

const marker = Symbol.for('countersign.error');

/** Base class of every error countersign throws on purpose. `hint` says what to do next. */
export class CountersignError extends Error {
  readonly [marker] = true;
  readonly code: ErrorCode;
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(options.hint ? `${message} ${options.hint}` : message, { cause: options.cause });
    this.code = code;
    this.hint = options.hint;
  }

  /** Works across duplicated module copies, unlike `instanceof`. */
  static is(value: unknown): value is CountersignError {
    return typeof value === 'object' && value !== null && marker in value;
  }

  toJSON(): { code: ErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}
