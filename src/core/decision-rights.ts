import { ForbiddenError } from './errors/forbidden-error.ts';

/**
 * Separation of duties, written once: who may decide, answer or reconcile a request. Every
 * path that takes a person's word on a request calls `assertMayDecide` — the library's
 * decide and reconcile (and so the API, the inbox, the CLI and queued continuations, which
 * all go through them) and a workflow's port answer, before the answer is recorded.
 */

/** The role a backend's token holds to post messages and start runs for customers. */
export const SERVICE_ROLE = 'service';

/** The people around a request, as the store recorded them. */
export interface RequestParties {
  /**
   * Who raised it: the authenticated caller that posted the message the model answered, or
   * started the run. Null when unknown (rows written before it was recorded).
   */
  raisedBy: string | null;
  /** The customer it acts for (the session's principal, the run's); null when none. */
  customer: string | null;
  /** The role a decider needs; null when any approver may decide. */
  requiredRole: string | null;
  /**
   * The role the request was escalated to, once its escalation fired; null before. Its
   * holders may decide it too: escalation widens who may decide, it never takes the right
   * away from those who had it.
   */
  escalatedTo: string | null;
  /**
   * The raiser and the customer may decide it themselves: an assistant a person approves for
   * their own use (the kitchen console), never a support desk. Off unless the agent says so.
   */
  selfApproval: boolean;
  /**
   * Who has approved it so far (a quorum filling up): each approval comes from a different
   * person, and one who approved has had their say. Absent or [] when none.
   */
  approvedBy?: readonly string[];
}

/** Who wants to decide. `roles` null: not known here (the CLI and library callers are trusted with roles). */
export interface Decider {
  name: string;
  roles: readonly string[] | null;
}

export type DecisionAction = 'decide' | 'answer' | 'reconcile' | 'claim';

const verbs: Record<DecisionAction, string> = {
  decide: 'decide',
  answer: 'answer',
  reconcile: 'settle the outcome of',
  claim: 'claim',
};

const gerunds: Record<DecisionAction, string> = {
  decide: 'Deciding',
  answer: 'Answering',
  reconcile: 'Settling the outcome of',
  claim: 'Claiming',
};

/** Names are compared without case, so `Alice` cannot decide what `alice` raised. */
const same = (a: string | null, b: string): boolean => a !== null && a.toLowerCase() === b.toLowerCase();

/** Why `decider` may not act on a request with these parties, in words for them; null when they may. */
export function decisionRefusal(
  parties: RequestParties,
  decider: Decider,
  action: DecisionAction = 'decide',
): string | null {
  const verb = verbs[action];
  const { roles } = decider;
  if (roles !== null && roles.length > 0 && roles.every((role) => role === SERVICE_ROLE)) {
    return `${decider.name} holds only the ${SERVICE_ROLE} role, which posts messages and starts runs for customers; it cannot ${verb} a request. A person with an approver token must.`;
  }
  if (!parties.selfApproval && same(parties.raisedBy, decider.name)) {
    return `${decider.name} raised this request (posted the message or started the run that led to it), so someone else must ${verb} it.`;
  }
  if (!parties.selfApproval && same(parties.customer, decider.name)) {
    return `${decider.name} is the customer this request acts for, so someone else must ${verb} it.`;
  }
  if ((parties.approvedBy ?? []).some((name) => same(name, decider.name))) {
    return `${decider.name} has already approved this request; each approval it needs must come from a different person.`;
  }
  if (
    parties.requiredRole !== null &&
    roles !== null &&
    !roles.includes(parties.requiredRole) &&
    !(parties.escalatedTo !== null && roles.includes(parties.escalatedTo))
  ) {
    const held = roles.length > 0 ? roles.join(', ') : 'no roles';
    const needed =
      parties.escalatedTo !== null && parties.escalatedTo !== parties.requiredRole
        ? `the ${parties.requiredRole} role (or ${parties.escalatedTo}, to which it was escalated)`
        : `the ${parties.requiredRole} role`;
    return `${gerunds[action]} this request needs ${needed}; ${decider.name} has ${held}.`;
  }
  return null;
}

/**
 * Whether `decider` may claim a request with these parties: exactly when they may decide it
 * (a claim is a promise to decide), so the raiser and the customer may not.
 */
export function claimRefusal(parties: RequestParties, decider: Decider): string | null {
  return decisionRefusal(parties, decider, 'claim');
}

/** Throws FORBIDDEN with the refusal; nothing has been written when it does. */
export function assertMayDecide(
  parties: RequestParties,
  decider: Decider,
  action: DecisionAction = 'decide',
): void {
  const refusal = decisionRefusal(parties, decider, action);
  if (refusal === null) return;
  throw new ForbiddenError(refusal, {
    hint:
      parties.requiredRole !== null && refusal.includes(`${parties.requiredRole} role`)
        ? `Ask someone with the ${parties.requiredRole} role.`
        : 'Nothing was decided or run; the request still waits for someone else.',
  });
}
