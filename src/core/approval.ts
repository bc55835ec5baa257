import type { JsonValue } from './json.ts';

/**
 * What waits for a person: a model's tool call (approve or reject), or a workflow's port
 * request (answered with data that fits the port). Both are one kind of row, decided by one
 * compare-and-set, bound by one hash, and judged by one separation-of-duties rule.
 */
export type RequestKind = 'tool-call' | 'port';

/** `answered` is a port request's decision; tool calls end approved, rejected or expired. */
export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'answered' | 'expired';
export type Verdict = Exclude<ApprovalStatus, 'pending'>;

/** Who or what took the decision: a person, or one of the system's own answers. */
export type DecisionKind = 'person' | 'moved-on' | 'expiry' | 'standing-rule' | 'auto-rule';

export interface Decision {
  verdict: Verdict;
  by: string;
  reason: string | null;
  at: string;
  kind: DecisionKind;
  /** A port request's answer, as recorded once; what the run consumes. Absent for tool calls. */
  response?: JsonValue;
  /**
   * The call as a person changed it before approving: what runs instead of the request's
   * `args`, bound by its own hash (check-binding.ts). Absent when approved as proposed.
   */
  edit?: RequestEdit;
  /**
   * Every approval of a quorum, the last one (this decision's) included, oldest first.
   * Absent when one approval was needed.
   */
  approvals?: Approval[];
}

/** One person's approval of a request that needs more than one (a quorum). */
export interface Approval {
  by: string;
  at: string;
  reason: string | null;
}

/**
 * Who must approve a call: approvers holding `role` (null: any approver), `approvals` of
 * them, each a different person (never the raiser or the customer). What a tool's approval
 * policy answers, normalized (approval-requirement.ts).
 */
export interface ApprovalRequirement {
  role: string | null;
  approvals: number;
}

/** One argument a person changed: `from`/`to` absent when the field was absent. */
export interface ArgChange {
  field: string;
  from?: JsonValue;
  to?: JsonValue;
}

/**
 * A call as a person edited it: the same tool, the edited arguments (validated, canonical,
 * hashed), the effect preview written for them, and what changed. The model's proposal stays
 * in the request's own `args`; both are kept and audited.
 */
export interface RequestEdit {
  args: JsonValue;
  /** Canonical JSON of `args`. */
  argsJson: string;
  argsHash: string;
  /** The effect preview of the edited call. */
  effect: string;
  /** SHA-256 of `effect`: an edited preview is detected like edited arguments. */
  effectHash: string;
  diff: ArgChange[];
  /** Who edited it, and when. */
  by: string;
  at: string;
}

/** The stored call a person is asked about. What runs is this record, never client input. */
export interface ApprovalRequest {
  id: string;
  kind: RequestKind;
  /** The agent session it belongs to; for a port request, the run's audit session `wf.<run>`. */
  session: string;
  /** The workflow run waiting on it: a port request's run, or the run whose agent made the call. */
  run: string | null;
  /** The agent's name; for a port request, the workflow's. */
  agent: string;
  /** The model's tool-call id; for a port request, the executor that asked (the port id along an edge). */
  callId: string;
  /** The tool's name; for a port request, the port's id. */
  tool: string;
  /** The payload: the call's arguments, or the port request's data. */
  args: JsonValue;
  /** Canonical JSON of `args`: the exact text that was shown and hashed. */
  argsJson: string;
  argsHash: string;
  effect: string;
  createdAt: string;
  expiresAt: string;
  status: ApprovalStatus;
  decision: Decision | null;
  /**
   * Who raised it: the authenticated caller that posted the message the model was answering
   * (an API token's name, the customer in the chat, the CLI's --as). Null in rows written
   * before it was recorded. They may not decide it (see decision-rights.ts).
   */
  raisedBy: string | null;
  /** The customer it acts for (the session's or run's principal); null when none. */
  customer: string | null;
  /** The role a decider needs; null when any approver may decide. */
  requiredRole: string | null;
  /**
   * SHA-256 of `effect`, checked with the arguments' hash (check-binding.ts), so a preview
   * edited in the store is refused like edited arguments. Null in rows written before it was.
   */
  effectHash: string | null;
  /** Argument fields a person may change before approving (top-level names); [] when none. */
  editable: string[];
  /** How many distinct people must approve (a quorum); 1 by default. */
  approvalsNeeded: number;
  /** Approvals so far, oldest first, while a quorum fills; the final one is in `decision`. */
  approvals: Approval[];
  /**
   * The call as edited by an approver while the request still waits (a quorum, or an edit
   * that needs a higher role): what later approvers approve and what runs. Null when none.
   */
  edit: RequestEdit | null;
  /**
   * Bumped by every partial approval or re-routing edit: the compare-and-set of
   * `recordApproval` is on it. 0 when the request was raised.
   */
  revision: number;
  /**
   * Who is working on it, and until when (ISO-8601). A claim lapses by itself at `until`
   * (readers treat a lapsed claim as none: `activeClaim`); it never stops anyone deciding.
   */
  claim: RequestClaim | null;
  /**
   * The role it was escalated to (the `request.escalated` nudge fired); null before, or when
   * none is configured. Holders of this role may decide it as well as `requiredRole`'s
   * (decision-rights.ts); escalation widens who may decide, it never narrows it.
   */
  escalatedTo: string | null;
  /** Its reminder, escalation and expiry-warning times and which have fired; null when none. */
  nudges: RequestNudges | null;
}

/** A person working on a request: others see it; it lapses at `until`. */
export interface RequestClaim {
  by: string;
  /** ISO-8601. */
  until: string;
}

/** The nudges a waiting request gives, in the order they fire (by time). */
export type NudgeKind = 'reminder' | 'escalated' | 'expiring';

/**
 * When a waiting request nudges people, fixed when it is raised (from the tool's or port's
 * `remindAfter`, `escalateAfter` + `escalateTo`, `warnBefore`), and when each fired. A null
 * `*At` is a nudge not configured; a null `*SentAt` one not yet fired. Each fires once: the
 * store advances the row's next nudge time with a compare-and-set (RequestTimers.advanceNudge).
 */
export type RequestNudges = {
  remindAt: string | null;
  remindedAt: string | null;
  escalateAt: string | null;
  /** The role it escalates to (with escalateAt). */
  escalateTo: string | null;
  escalatedAt: string | null;
  /** When `request.expiring` is sent (expiresAt minus the tool's warnBefore). */
  expiringAt: string | null;
  expiringSentAt: string | null;
};

export const DEFAULT_REJECTION_REASON =
  'The person reviewed this call and turned it down, so nothing changed. ' +
  'Do not propose the same call again; ask them what they would like instead.';

/**
 * How countersign's notice of kept calls' outcomes begins (a user-role message it posts;
 * see src/agent/keep-waiting.ts): models, the demo one included, can tell it from the customer.
 */
export const KEPT_NOTICE_LEAD =
  '[countersign] Update on calls you proposed earlier that were waiting for a person (this is not a message from the customer):';

export const MOVED_ON_REASON = 'The person sent a new message instead, so this was not done.';

export const EXPIRED_REASON =
  'This request expired without a decision, so nothing was done. Do not retry it unless the person asks again.';
