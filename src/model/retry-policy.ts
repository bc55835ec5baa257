import type { APICallError } from '@ai-sdk/provider';
import { lazyRequire } from '../core/lazy-require.ts';

// Loaded at the first failure: a model call that succeeds never pays for it.
const provider = lazyRequire<{ APICallError: typeof APICallError }>('@ai-sdk/provider');
const isApiCallError = (error: unknown): error is APICallError => provider().APICallError.isInstance(error);

/** How a failed model call is tried again. `retry: false` on the agent turns it off. */
export interface RetryOptions {
  /** Tries in all, the first included (default 3). */
  maxAttempts?: number;
  /** Wait before the second try; doubles each time (default 500 ms). */
  initialDelayMs?: number;
  /** Cap on one wait, also on a server's Retry-After (default 8 s). */
  maxDelayMs?: number;
}

export type RetryPolicy = Required<RetryOptions>;

export const NO_RETRY: RetryPolicy = { maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0 };

export function retryPolicy(options: RetryOptions | false | undefined): RetryPolicy {
  if (options === false) return NO_RETRY;
  return {
    maxAttempts: Math.max(1, Math.floor(options?.maxAttempts ?? 3)),
    initialDelayMs: Math.max(0, options?.initialDelayMs ?? 500),
    maxDelayMs: Math.max(0, options?.maxDelayMs ?? 8_000),
  };
}

/** A stream that stopped before its `finish` part: the connection dropped mid-reply. */
export class StreamCutError extends Error {
  override readonly name = 'StreamCutError';
}

const transientCodes = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * Worth another try: what the AI SDK marks retryable (408, 409, 429, 5xx), a dropped
 * connection or stream, and a 429/5xx from providers that throw their own errors. A 400 or
 * 401 would fail the same way again, so it is not retried.
 */
export function isRetryable(error: unknown): boolean {
  if (isApiCallError(error)) return error.isRetryable;
  if (error instanceof StreamCutError) return true;
  if (typeof error !== 'object' || error === null) return false;
  if ((error as Error).name === 'AbortError') return false;
  const status =
    (error as { statusCode?: unknown; status?: unknown }).statusCode ??
    (error as { status?: unknown }).status;
  if (typeof status === 'number') return status === 429 || status >= 500;
  const code = (error as { code?: unknown }).code ?? (error as { cause?: { code?: unknown } }).cause?.code;
  if (typeof code === 'string' && transientCodes.has(code)) return true;
  // undici's fetch reports every network failure as this TypeError, the cause holding the code.
  return error instanceof TypeError && error.message === 'fetch failed';
}

/** Exponential backoff, or the server's Retry-After when it asks for a wait within the cap. */
export function retryDelayMs(policy: RetryPolicy, attempt: number, error: unknown): number {
  const backoff = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (attempt - 1));
  const asked = isApiCallError(error) ? retryAfterMs(error.responseHeaders) : undefined;
  return asked !== undefined && asked <= policy.maxDelayMs ? Math.max(asked, 0) : backoff;
}

function retryAfterMs(headers: Record<string, string> | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = Number.parseFloat(headers['retry-after-ms'] ?? '');
  if (Number.isFinite(ms)) return ms;
  const raw = headers['retry-after'];
  if (raw === undefined) return undefined;
  const seconds = Number.parseFloat(raw);
  if (Number.isFinite(seconds)) return seconds * 1000;
  const date = Date.parse(raw);
  return Number.isFinite(date) ? date - Date.now() : undefined;
}
