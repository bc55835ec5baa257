import { canonicalJson, sha256Hex } from './canonical-json.ts';
import { IntegrityViolationError } from './errors/integrity-violation-error.ts';
import type { JsonValue } from './json.ts';

/**
 * A stored request as far as its binding goes: the payload a person is asked about (a tool's
 * arguments, a port's request data), the canonical text recorded when it was raised, and
 * that text's SHA-256. A decision is bound to the hash, so what is acted on must still hash
 * to it.
 */
export interface BindingSubject {
  id: string;
  payload: JsonValue;
  payloadJson: string;
  payloadHash: string;
}

/** The moment a binding is checked; it names what is refused in the error. */
export type BindingMoment = 'deciding' | 'executing' | 'answering' | 'importing';

/**
 * What breaks the binding, in words, or null when the payload is still what was hashed.
 * The one comparison behind every check, for callers that must record the problem (an
 * audit entry, a tool result) before they refuse.
 */
export function bindingProblem(subject: BindingSubject): string | null {
  let json: string;
  try {
    json = canonicalJson(subject.payload);
  } catch {
    return 'the stored request has no canonical JSON form';
  }
  if (json !== subject.payloadJson) return 'the stored request differs from its recorded text';
  if (sha256Hex(json) !== subject.payloadHash)
    return 'the stored request no longer matches the hash recorded when it was raised';
  return null;
}

const refusal: Record<BindingMoment, { lead: (id: string) => string; hint: string }> = {
  deciding: {
    lead: (id) => `Request ${id} cannot be decided`,
    hint: 'Nothing was decided or run. Inspect the store for tampering.',
  },
  executing: {
    lead: (id) => `Refused to run request ${id}`,
    hint: 'Nothing was run. Inspect the store for tampering; the agent was told the call did not run.',
  },
  answering: {
    lead: (id) => `Request ${id} cannot be answered`,
    hint: 'Nothing was answered or run. Inspect the store for tampering.',
  },
  importing: {
    lead: (id) => `Cannot import request ${id}`,
    hint: 'Nothing was written: the file was altered after it was exported. Export the session again from its source.',
  },
};

/** The INTEGRITY_VIOLATION for a request refused at `when`, naming the request and the problem. */
export function bindingError(id: string, problem: string, when: BindingMoment): IntegrityViolationError {
  const { lead, hint } = refusal[when];
  return new IntegrityViolationError(`${lead(id)}: ${problem}.`, { hint });
}

/**
 * Re-canonicalizes and re-hashes a stored request's payload and throws INTEGRITY_VIOLATION
 * when it is not what was raised: used before deciding, before acting and when importing,
 * for tool calls and port requests alike.
 */
export function checkBinding(subject: BindingSubject, when: BindingMoment): void {
  const problem = bindingProblem(subject);
  if (problem !== null) throw bindingError(subject.id, problem, when);
}

/** A tool-call request's binding: its arguments are the payload. */
export function toolCallBinding(request: {
  id: string;
  args: JsonValue;
  argsJson: string;
  argsHash: string;
}): BindingSubject {
  return {
    id: request.id,
    payload: request.args,
    payloadJson: request.argsJson,
    payloadHash: request.argsHash,
  };
}
