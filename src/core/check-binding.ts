import { canonicalJson, sha256Hex } from './canonical-json.ts';
import { IntegrityViolationError } from './errors/integrity-violation-error.ts';
import type { JsonValue } from './json.ts';

/** An edited call's own binding: its arguments and its effect preview, each hashed. */
export interface EditBinding {
  args: JsonValue;
  argsJson: string;
  argsHash: string;
  effect: string;
  effectHash: string;
}

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
  /**
   * The effect preview a person was shown and the SHA-256 recorded with it; a null hash (a
   * row written before previews were bound) is not checked.
   */
  effect?: { text: string; hash: string | null };
  /** Edited calls the request carries (the one waiting for more approvals, the one decided). */
  edits?: readonly EditBinding[];
}

/** SHA-256 of an effect preview: what binds the words a person read to the request. */
export function effectHashOf(effect: string): string {
  return sha256Hex(effect);
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
  if (
    subject.effect &&
    subject.effect.hash !== null &&
    effectHashOf(subject.effect.text) !== subject.effect.hash
  )
    return 'the effect shown for the stored request differs from the one recorded when it was raised';
  for (const edit of subject.edits ?? []) {
    const problem = bindingProblem({
      id: subject.id,
      payload: edit.args,
      payloadJson: edit.argsJson,
      payloadHash: edit.argsHash,
      effect: { text: edit.effect, hash: edit.effectHash },
    });
    if (problem !== null) return `the edited call: ${problem.replace('the stored request', 'it')}`;
  }
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

/**
 * A request's binding, for either kind: its payload (a call's arguments, a port's data), its
 * effect preview, and any edited call it carries (waiting for more approvals, or decided).
 */
export function toolCallBinding(request: {
  id: string;
  args: JsonValue;
  argsJson: string;
  argsHash: string;
  effect?: string;
  effectHash?: string | null;
  edit?: EditBinding | null;
  decision?: { edit?: EditBinding } | null;
}): BindingSubject {
  const edits = [request.edit, request.decision?.edit].filter(
    (edit): edit is EditBinding => edit !== undefined && edit !== null,
  );
  return {
    id: request.id,
    payload: request.args,
    payloadJson: request.argsJson,
    payloadHash: request.argsHash,
    ...(request.effect !== undefined
      ? { effect: { text: request.effect, hash: request.effectHash ?? null } }
      : {}),
    ...(edits.length > 0 ? { edits } : {}),
  };
}

/** The same binding under the name that says it covers port requests too. */
export const requestBinding = toolCallBinding;
