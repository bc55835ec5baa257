import type { ApprovalRequest } from '../../core/approval.ts';
import type { AuditEvent } from '../../core/audit.ts';
import type { Message, StoredMessage } from '../../core/messages.ts';
import type { OpenBatch, SessionRecord } from '../../core/session.ts';
import type { StalledSession } from '../../core/stalled-session.ts';
import type { ExecutionFinish } from './ledger.ts';

/**
 * Everything one step of a run writes, committed in one transaction. The write is
 * proportional to the step (new messages, new requests), never to the whole history.
 */
export interface StepCommit {
  session: string;
  /** Fencing: the commit fails with SESSION_BUSY unless this owner still holds the lease. */
  leaseOwner: string;
  /** The session's messageCount this step was computed against (optimistic check). */
  expectedMessageCount: number;
  append: Message[];
  /** `undefined` leaves the open batch as it is; `null` clears it. */
  batch?: OpenBatch | null;
  approvals?: ApprovalRequest[];
  audit?: AuditEvent[];
  /**
   * Ledger results written in the same transaction, before the step: the last approved call
   * of a batch finishes together with the step that hands its result to the model, so
   * neither exists without the other. Each must be `started` or `unknown`, as for
   * `finishExecution`.
   */
  finishes?: Array<ExecutionFinish & { requestId: string }>;
  /** The run ends with this step: the lease is released in the same transaction. */
  releaseLease?: boolean;
  at: string;
}

export interface StalledSessionQuery {
  /** A lease whose term ended before this instant counts as free (as in `acquireLease`). */
  nowMs: number;
  /** At most this many (default 100). */
  limit?: number;
  /**
   * Only sessions of these agents. A process continues only sessions its app has agents
   * for; without this, another app's stalled sessions sharing the store would fill its limit.
   */
  agents?: readonly string[];
  /**
   * Also list sessions whose lease is still within its term. The store cannot tell a live
   * holder from a dead one; a caller that can (a holder on this host whose process is gone)
   * asks for these and filters them itself.
   */
  includeHeld?: boolean;
}

/** Sessions and their messages: what a run reads and the one fenced write per step. */
export interface SessionLog {
  /** Creates the session if absent; returns the stored record either way. */
  ensureSession(input: {
    id: string;
    agent: string;
    principal: string | null;
    at: string;
  }): Promise<SessionRecord>;
  getSession(id: string): Promise<SessionRecord | null>;
  listSessions(): Promise<SessionRecord[]>;
  loadMessages(session: string): Promise<StoredMessage[]>;
  commitStep(step: StepCommit): Promise<SessionRecord>;
  /**
   * Sessions stalled after a decision, oldest `updatedAt` first (then by id): the session has
   * an open batch, none of its requests is `pending`, its lease is free or lapsed (unless
   * `includeHeld`), and no ledger row of it is `unknown` (that waits for a person's
   * reconcile, not for a sweep). Continuing one is an ordinary `resume`. Cheap enough to
   * poll: SQL backends walk a partial index of sessions with an open batch.
   */
  listStalledSessions(query: StalledSessionQuery): Promise<StalledSession[]>;
}
