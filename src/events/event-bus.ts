import type { ApprovalView, TurnStatus } from '../agent/views.ts';
import type { DecisionKind, NudgeKind, RequestKind, Verdict } from '../core/approval.ts';
import type { ExecutionStatus } from '../core/execution.ts';

/**
 * What happened, for whoever is watching: an inbox, a webhook bridge, a chat page. Events
 * are notifications, never the record — every one of them can be re-read from the store —
 * so a missed event costs a refresh, not a decision. All but `turn.finished` are derived from
 * audit entries (`eventsOf`, from-audit.ts): the audit log is the durable event log.
 */
export type CountersignEvent =
  | { type: 'approval.requested'; at: string; approval: ApprovalView }
  | {
      type: 'approval.decided';
      at: string;
      requestId: string;
      session: string;
      verdict: Verdict;
      by: string;
      kind: DecisionKind;
    }
  /**
   * One approval of a quorum was recorded (not the last), or an edit re-routed the request:
   * it still waits, now with `approvals` of `approvalsNeeded`, for `requiredRole`.
   */
  | {
      type: 'approval.progressed';
      at: string;
      requestId: string;
      session: string;
      by: string;
      approvals: number;
      approvalsNeeded: number;
      requiredRole: string | null;
      edited: boolean;
    }
  | { type: 'execution.finished'; at: string; requestId: string; session: string; status: ExecutionStatus }
  | { type: 'turn.finished'; at: string; session: string; status: TurnStatus; reply: string | null }
  /** A workflow run waits at a request port; `session` is the run's audit session (`wf.<run>`). */
  | {
      type: 'workflow.requested';
      at: string;
      requestId: string;
      session: string;
      run: string;
      workflow: string;
      port: string;
      expiresAt: string | null;
    }
  /** A port request was answered by `by`, or (`workflow.expired`) expired unanswered. */
  | {
      type: 'workflow.answered' | 'workflow.expired';
      at: string;
      requestId: string;
      session: string;
      run: string;
      workflow: string;
      port: string;
      by: string;
    }
  | NudgeEvent
  | ClaimEvent;

/** `request.reminder` / `request.escalated` / `request.expiring`: the nudges (see RequestNudges). */
export type NudgeEventType = `request.${NudgeKind}`;

/** A waiting request nudged someone: fired once across every instance (from its audit entry). */
export interface NudgeEvent {
  type: NudgeEventType;
  at: string;
  requestId: string;
  session: string;
  kind: RequestKind;
  /** The tool's name; for a port request, the port's id. */
  tool: string;
  /** When the nudge was scheduled (it fires at the first sweep after). */
  dueAt: string;
  expiresAt: string;
  requiredRole: string | null;
  /** The role it was escalated to (`request.escalated` only; null otherwise). */
  escalatedTo: string | null;
}

/** Someone claimed a request until `until`, or released it (`until` null). */
export interface ClaimEvent {
  type: 'request.claimed' | 'request.released';
  at: string;
  requestId: string;
  session: string;
  by: string;
  until: string | null;
}

export type EventListener = (event: CountersignEvent) => void;

/**
 * Publish/subscribe across everything that shares a store: in one process (memory) or
 * across instances on PostgreSQL (LISTEN/NOTIFY). Publishing never throws into the
 * caller's run: a lost notification must not undo a committed decision.
 */
export interface EventBus {
  publish(event: CountersignEvent): Promise<void>;
  /** Returns the function that unsubscribes. */
  subscribe(listener: EventListener): () => void;
  close(): Promise<void>;
}
