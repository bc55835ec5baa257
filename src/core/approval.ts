import type { JsonValue } from './json.ts';

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired';
export type Verdict = Exclude<ApprovalStatus, 'pending'>;

/** Who or what took the decision: a person, or one of the system's own answers. */
export type DecisionKind = 'person' | 'moved-on' | 'expiry' | 'standing-rule' | 'auto-rule';

export interface Decision {
  verdict: Verdict;
  by: string;
  reason: string | null;
  at: string;
  kind: DecisionKind;
}

/** The stored call a person is asked about. What runs is this record, never client input. */
export interface ApprovalRequest {
  id: string;
  session: string;
  agent: string;
  callId: string;
  tool: string;
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
}

export const DEFAULT_REJECTION_REASON =
  'The person reviewed this call and turned it down, so nothing changed. ' +
  'Do not propose the same call again; ask them what they would like instead.';

export const MOVED_ON_REASON = 'The person sent a new message instead, so this was not done.';

export const EXPIRED_REASON =
  'This request expired without a decision, so nothing was done. Do not retry it unless the person asks again.';
