import { CorruptDataError } from '../../core/errors/corrupt-data-error.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import { StoreUnavailableError } from '../../core/errors/store-unavailable-error.ts';

const CHECK_STORE =
  'Check that PostgreSQL is running and reachable, and that COUNTERSIGN_STORE ' +
  '(postgres://USER:PASSWORD@HOST:PORT/DATABASE) names the right server, database and credentials.';

// Errors Node reports for a socket that never connected or died under us.
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

// pg reports a lost or timed-out connection as a plain Error with one of these messages.
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|not queryable|connection error|Connection ended|does not support SSL/i;

/** SQLSTATEs after which PostgreSQL rolled the whole transaction back and a retry is safe. */
const RETRYABLE = new Set(['40001', '40P01']);

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A PostgreSQL error reply (not a network error): its `code` is a five-character SQLSTATE. */
function sqlState(error: unknown): string | undefined {
  const code = codeOf(error);
  return error instanceof Error && code !== undefined && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** 25P02: a statement sent behind one that failed in the same transaction (group-commit.ts). */
export function isInFailedTransaction(error: unknown): boolean {
  return sqlState(error) === '25P02';
}

/** 22012: how the audit link says it found no head row to move (row-writers.ts). */
export function isDivisionByZero(error: unknown): boolean {
  return sqlState(error) === '22012';
}

export function isRetryable(error: unknown): boolean {
  const state = sqlState(error);
  return state !== undefined && RETRYABLE.has(state);
}

/**
 * The connection died under a statement: the socket closed or errored, or the server ended
 * the session (57P01 after pg_terminate_backend or a fast shutdown, 57P02 after a crash of
 * another backend, class 08).
 */
export function isConnectionLost(error: unknown): boolean {
  const state = sqlState(error);
  if (state !== undefined) return state.startsWith('08') || state === '57P01' || state === '57P02';
  return isConnectionFailure(error);
}

/**
 * What a statement in flight learns when its connection drops. `outcome` is what can be
 * known about the work: `rolled-back` when it was a transaction whose COMMIT had not been
 * sent (PostgreSQL discards it), `read` when it changed nothing, `unknown` when a COMMIT or
 * an autocommit write was on the wire and may have taken effect before the drop.
 */
export function connectionLostError(
  error: unknown,
  target: string,
  outcome: 'rolled-back' | 'read' | 'unknown',
): StoreUnavailableError {
  const detail = error instanceof Error ? error.message : String(error);
  const saved = {
    'rolled-back': 'Nothing was saved: PostgreSQL rolled the unfinished transaction back.',
    read: 'Nothing was changed.',
    unknown: 'The change may or may not have been saved; check before repeating it.',
  }[outcome];
  const lost = new StoreUnavailableError(
    `The connection to the store at ${target} was lost while a statement was running (PostgreSQL: ${detail}).`,
    {
      hint: `${saved} Try again in a moment: countersign opens a new connection by itself. If it keeps failing, check that PostgreSQL is running and reachable.`,
      cause: error,
    },
  );
  lostConnections.add(lost);
  return lost;
}

const lostConnections = new WeakSet<Error>();

/**
 * Whether `error` is connectionLostError's: the work's connection died under it, so whether
 * its transaction committed may be unknown and none of it may simply run again.
 */
export function isLostConnectionError(error: unknown): boolean {
  return error instanceof Error && lostConnections.has(error);
}

export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error) || CountersignError.is(error)) return false;
  const code = codeOf(error);
  if (code !== undefined && NETWORK_CODES.has(code)) return true;
  return sqlState(error) === undefined && CONNECTION_MESSAGES.test(error.message);
}

/**
 * Turns what pg reports into countersign's typed errors; anything else (a bug, a typed
 * error thrown on purpose inside a transaction) passes through unchanged. `target` names
 * the server without credentials; `connecting` marks failures while opening a connection,
 * which are all the server's or the configuration's fault.
 */
export function translatePgError(error: unknown, target: string, connecting = false): unknown {
  if (CountersignError.is(error) || !(error instanceof Error)) return error;
  const detail = `(PostgreSQL: ${error.message})`;
  const unavailable = (message: string, hint = CHECK_STORE) =>
    new StoreUnavailableError(`${message} ${detail}`, { hint, cause: error });
  const state = sqlState(error);
  if (state === undefined) {
    if (connecting || isConnectionFailure(error))
      return unavailable(`The store at ${target} cannot be reached.`);
    return error;
  }
  const cls = state.slice(0, 2);
  if (cls === '08' || cls === '28' || state === '3D000' || state === '57P01' || state === '57P02') {
    return unavailable(`The store at ${target} cannot be used.`);
  }
  if (state === '53100') {
    return unavailable(
      `The disk of the PostgreSQL server behind ${target} is full.`,
      'Free space on the database server (or grow its volume) and try again; the write that failed was rolled back.',
    );
  }
  if (state === '57P03' || cls === '53') {
    return unavailable(`The store at ${target} is not accepting work right now.`, 'Try again in a moment.');
  }
  if (RETRYABLE.has(state) || state === '55P03' || state === '57014') {
    return unavailable(
      `The store at ${target} stayed contended past the retries.`,
      'Another process holds the rows; try again.',
    );
  }
  if (state === '42501') {
    return unavailable(
      `The database role may not use the store at ${target}.`,
      'Grant the role USAGE and CREATE on the schema (and CREATE on the database for the first start), or run countersign as its owner.',
    );
  }
  if (state === '25006') {
    return unavailable(
      `The store at ${target} is read-only.`,
      'Point COUNTERSIGN_STORE at the primary server, not a standby.',
    );
  }
  if (cls === 'XX') {
    return new CorruptDataError(`The PostgreSQL store at ${target} reports damage ${detail}.`, {
      hint: 'Restore it from a backup; nothing was changed.',
      cause: error,
    });
  }
  if (cls === '23') {
    return new InvalidInputError(
      `The write conflicts with data already in the store at ${target} ${detail}.`,
      {
        cause: error,
      },
    );
  }
  if (state === '22021' || state === '22P05') {
    return new InvalidInputError(`PostgreSQL cannot store this text ${detail}.`, {
      hint: 'Text columns cannot hold a NUL character (\\u0000); remove it from the value.',
      cause: error,
    });
  }
  return error;
}

/** host:port/database of a connection string, never its user or password. */
export function describeTarget(connectionString: string, schema: string): string {
  try {
    const url = new URL(connectionString);
    const host = url.host === '' ? 'local socket' : url.host;
    return `postgres://${host}${url.pathname} (schema ${schema})`;
  } catch {
    return `the PostgreSQL server (schema ${schema})`;
  }
}
