import type { ApprovalView, TurnStatus } from '../agent/views.ts';
import type { DecisionKind, Verdict } from '../core/approval.ts';
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
    };

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
