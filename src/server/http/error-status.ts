import { CountersignError, type ErrorCode } from '../../core/errors/countersign-error.ts';
import { ServerError, type ServerOnlyCode } from './server-error.ts';

export type HttpErrorCode = ErrorCode | ServerOnlyCode;

/**
 * The one table from stable error code to HTTP status. Typed as a full record, so a new
 * code added to the library does not compile until it is given a status here.
 */
export const statusOfCode: Record<HttpErrorCode, number> = {
  INVALID_INPUT: 400,
  INVALID_CURSOR: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  ALREADY_DECIDED: 409,
  OUTCOME_UNKNOWN: 409,
  CHECKPOINT_INCOMPATIBLE: 409,
  NOT_EDITABLE: 422,
  CLAIMED: 409,
  EXPIRED: 410,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  STEP_LIMIT: 500,
  CORRUPT_DATA: 500,
  INTEGRITY_VIOLATION: 500,
  CONFIG_ERROR: 500,
  INTERNAL: 500,
  MODEL_ERROR: 502,
  // Busy means "another run holds this session right now": transient, so retry later.
  SESSION_BUSY: 503,
  STORE_UNAVAILABLE: 503,
};

export interface ErrorReply {
  status: number;
  body: { error: { code: HttpErrorCode; message: string } };
  headers: Record<string, string>;
}

/** Any thrown value as the API's error body. Unknown errors never leak their message. */
export function toErrorReply(error: unknown): ErrorReply {
  let code: HttpErrorCode = 'INTERNAL';
  let message = 'Internal error. The server log has the details.';
  let retryAfter: number | undefined;
  if (error instanceof ServerError) {
    code = error.code;
    message = error.message;
    retryAfter = error.retryAfter;
  } else if (CountersignError.is(error)) {
    code = error.code;
    message = error.message;
  }
  const status = statusOfCode[code] ?? 500;
  if (retryAfter === undefined && (code === 'SESSION_BUSY' || code === 'STORE_UNAVAILABLE')) retryAfter = 1;
  const headers: Record<string, string> = {};
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  if (code === 'UNAUTHENTICATED') headers['www-authenticate'] = 'Bearer realm="countersign"';
  return { status, body: { error: { code, message } }, headers };
}
