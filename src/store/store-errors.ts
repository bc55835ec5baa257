import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import { SessionBusyError } from '../core/errors/session-busy-error.ts';
import type { ExecutionStatus } from '../core/execution.ts';
import type { LeaseInfo } from '../core/lease.ts';
import type { LeaseFence } from './ports/leases.ts';

// Shared by every backend so the same failure reads the same whichever store is configured.

export function sessionNotFound(id: string): NotFoundError {
  return new NotFoundError(`Session ${id} does not exist.`, {
    hint: 'Create it first (ensureSession), or check the session id.',
  });
}

export function leaseLost(session: string, holder: string | null, owner: string): SessionBusyError {
  return new SessionBusyError(
    `Session ${session} is held by ${holder === null ? 'no run' : `run ${holder}`}, not by ${owner}; the step was not saved.`,
    { hint: 'Another run took the session over; load it again before continuing.' },
  );
}

/**
 * A fenced ledger start refused (lease-rules.ts): `lease` is the session's as read when the
 * start was refused. The caller must not run the call.
 */
export function executionStartRefused(
  requestId: string,
  session: string,
  lease: LeaseInfo | null,
  fence: LeaseFence,
): SessionBusyError {
  const why =
    lease?.owner === fence.owner
      ? `the lease of run ${fence.owner} ran out at ${new Date(lease.untilMs).toISOString()} (now ${new Date(fence.nowMs).toISOString()})`
      : `session ${session} is held by ${lease?.owner == null ? 'no run' : `run ${lease.owner}`}, not by ${fence.owner}`;
  return new SessionBusyError(`The call of request ${requestId} was not started: ${why}.`, {
    hint: 'Nothing ran. The run holding the session (or the next one to take it) runs the call; load the session again before continuing.',
  });
}

export function staleStep(session: string, stored: number, expected: number): SessionBusyError {
  return new SessionBusyError(
    `Session ${session} has ${stored} messages but the step was computed against ${expected}; the step was not saved.`,
    { hint: 'Another writer changed the session; load it again before continuing.' },
  );
}

export function approvalExists(id: string): InvalidInputError {
  return new InvalidInputError(`Approval request ${id} already exists.`);
}

export function approvalOutsideSession(id: string, owner: string, session: string): InvalidInputError {
  return new InvalidInputError(`Approval request ${id} belongs to session ${owner}, not ${session}.`);
}

/** A partial approval that is not one: approvers twice, or as many as the quorum needs. */
export function approvalUpdateInvalid(id: string, problem: string): InvalidInputError {
  return new InvalidInputError(
    `The approval update of request ${id} is not valid: ${problem}; nothing was written.`,
    {
      hint: 'Each approval of a quorum comes from a different person; the last one goes through decide.',
    },
  );
}

export function ruleExists(id: string): InvalidInputError {
  return new InvalidInputError(`Standing rule ${id} already exists; nothing was decided.`);
}

export function ruleOutsideSession(
  id: string,
  owner: string,
  request: string,
  session: string,
): InvalidInputError {
  return new InvalidInputError(
    `Standing rule ${id} is for session ${owner}, but request ${request} belongs to ${session}; nothing was decided.`,
    { hint: 'A rule can only be granted for the session of the request it comes from.' },
  );
}

export function executionExists(requestId: string): InvalidInputError {
  return new InvalidInputError(`An execution of request ${requestId} is already in the ledger.`);
}

export function executionNotFound(requestId: string): NotFoundError {
  return new NotFoundError(`No execution was started for request ${requestId}.`, {
    hint: 'Start it (startExecution) before finishing it.',
  });
}

export function executionAlreadyFinished(requestId: string, status: ExecutionStatus): InvalidInputError {
  return new InvalidInputError(`The execution of request ${requestId} already finished as ${status}.`, {
    hint: 'A finished execution is final; nothing was changed.',
  });
}

export function sessionExists(id: string): InvalidInputError {
  return new InvalidInputError(`Session ${id} already exists in this store.`, {
    hint: 'Import into a store that does not have it, or delete it there first.',
  });
}

export function finishedTwice(requestId: string): InvalidInputError {
  return new InvalidInputError(
    `The step finishes the execution of request ${requestId} twice; nothing was saved.`,
    {
      hint: 'Give each ledger result once per step.',
    },
  );
}

export function finishStatusInvalid(requestId: string, status: unknown): InvalidInputError {
  return new InvalidInputError(
    `The execution of request ${requestId} cannot finish as ${String(status)}; nothing was changed.`,
    { hint: 'A finished execution is succeeded, failed or unknown.' },
  );
}
