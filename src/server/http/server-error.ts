/** Codes only the HTTP layer produces; the library's own codes live in src/core/errors. */
export type ServerOnlyCode =
  | 'UNAUTHENTICATED'
  | 'METHOD_NOT_ALLOWED'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMITED'
  | 'INTERNAL';

/** An HTTP-level refusal (no credentials, body too large, too many attempts). */
export class ServerError extends Error {
  override readonly name = 'ServerError';
  readonly code: ServerOnlyCode;
  /** Seconds a client should wait before trying again (429, 503). */
  readonly retryAfter: number | undefined;

  constructor(code: ServerOnlyCode, message: string, options: { retryAfter?: number } = {}) {
    super(message);
    this.code = code;
    this.retryAfter = options.retryAfter;
  }
}
