import type { ApprovalRequest, Decision } from '../../core/approval.ts';
import { localTime } from './local-time.ts';

/**
 * What happened and what to do, in the approver's words, with times in their zone. The
 * library's messages speak to developers ("EXPIRED: Request … expired at 2026-12-01T08:41Z",
 * "run `countersign pending`"); the inbox says the same things to the person at the page.
 * The error codes are the stable part; each page that shows an error goes through here.
 */
export interface Reader {
  /** The signed-in person's name: "you" when a decision was theirs. */
  name: string;
  timeZone: string;
}

const verbs: Record<Decision['verdict'], string> = {
  approved: 'approved',
  rejected: 'rejected',
  answered: 'answered',
  expired: 'expired',
};

const kindWords: Record<Decision['kind'], string> = {
  person: 'a person',
  'moved-on': 'the customer moved on',
  expiry: 'expiry',
  'standing-rule': 'an "always approve" rule',
  'auto-rule': 'an automatic rule',
};

/** "mia approved this at 1 Dec 2026, 09:41 CET (reason: …)", or "You approved this …". */
export function decidedText(decision: Decision, reader: Reader): string {
  const at = localTime(decision.at, reader.timeZone);
  if (decision.verdict === 'expired')
    return `It expired at ${at} before anyone decided, so nothing was done.`;
  const who =
    decision.by.toLowerCase() === reader.name.toLowerCase()
      ? 'You'
      : decision.kind === 'person'
        ? decision.by
        : `${decision.by} (${kindWords[decision.kind]})`;
  const reason = decision.reason ? ` Reason: “${decision.reason}”` : '';
  return `${who} ${verbs[decision.verdict]} this at ${at}.${reason}`;
}

/**
 * The words for a refused or failed decision. `request` is the row as it stands after the
 * attempt (read again by the caller), so the message can name who decided and when.
 */
export function refusalText(
  error: { code: string; message: string; hint?: string | undefined },
  request: Pick<ApprovalRequest, 'id' | 'expiresAt' | 'decision'> | null,
  reader: Reader,
): string {
  // The hint says what a developer sends next (a command, a JSON body); the person gets the fact.
  const message =
    error.hint && error.message.endsWith(` ${error.hint}`)
      ? error.message.slice(0, -(error.hint.length + 1))
      : error.message;
  switch (error.code) {
    case 'ALREADY_DECIDED':
      return request?.decision
        ? `Someone was quicker: ${decidedText(request.decision, reader)} Your decision was not recorded; theirs stands.`
        : 'This request was already decided; your decision was not recorded.';
    case 'EXPIRED':
      return `Too late: this request expired${request?.expiresAt ? ` at ${localTime(request.expiresAt, reader.timeZone)}` : ''} without a decision, so nothing was done. The agent tells the customer; if they still want it, they will ask again.`;
    case 'NOT_FOUND':
      // "There is no request …" gets the page's words; a narrower one ("Run … has no request …") is kept.
      return message.startsWith('There is no request') || !message
        ? notFoundText(request?.id ?? null)
        : `${message} Everything waiting for you is under Pending requests.`;
    case 'FORBIDDEN':
      // decisionRefusal's words already speak to the person ("needs the manager role; …").
      return `You cannot decide this one: ${message}`;
    case 'INTEGRITY_VIOLATION':
      return 'Nothing ran: the stored call no longer matches what was asked for when the request was raised. Do not approve it; tell whoever runs countersign, since the store may have been changed.';
    case 'SESSION_BUSY':
      return 'The agent is busy with this conversation right now. Try again in a moment; nothing was lost.';
    case 'STORE_UNAVAILABLE':
      return 'The inbox cannot reach its database right now, so nothing was recorded. Try again in a moment.';
    case 'INVALID_INPUT':
      return `That cannot be sent as it is: ${message}`;
    case 'CLAIMED':
      return `Someone else is on it: ${message} You can still decide it; claiming is never needed to decide.`;
    case 'NOT_EDITABLE':
      return `That change is not allowed: ${message} Nothing was decided.`;
    case 'OUTCOME_UNKNOWN':
      return 'Nobody knows whether this call ran: the process stopped while it was running. Check the outcome in the system it acts on, then settle it (countersign reconcile).';
    default:
      return `That did not work: ${message}`;
  }
}

/** A decision that won, whose continuation (the agent's reply) then failed: it still stands. */
export function recordedButStuckText(decision: Decision, reason: { code: string; message: string }): string {
  const what =
    decision.verdict === 'approved' ? 'approval' : decision.verdict === 'rejected' ? 'rejection' : 'answer';
  const why =
    reason.code === 'MODEL_ERROR'
      ? 'the model did not answer'
      : reason.code === 'SESSION_BUSY'
        ? 'the conversation is busy'
        : reason.message;
  return `Your ${what} is recorded, but the agent could not continue yet (${why}). It continues on its own when it can; nothing needs to be decided again.`;
}

/** The 404 of a request page: what the link was, and where to look instead. */
export function notFoundText(id: string | null): string {
  return id
    ? `There is no request ${id} here. The link may be incomplete, or it belongs to another countersign server. Everything waiting for you is under Pending requests.`
    : 'There is no page at this address. Everything waiting for you is under Pending requests.';
}
