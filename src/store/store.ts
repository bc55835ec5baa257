import type { Liveness } from '../liveness/liveness.ts';
import type { AppState } from './ports/app-state.ts';
import type { AuditLog } from './ports/audit-log.ts';
import type { PrincipalErasure, Retention } from './ports/erasure.ts';
import type { Leases } from './ports/leases.ts';
import type { Ledger } from './ports/ledger.ts';
import type { RequestBook, RuleBook } from './ports/request-book.ts';
import type { RequestTimers } from './ports/request-timers.ts';
import type { SessionLog } from './ports/session-log.ts';
import type { SessionTransfer } from './ports/session-transfer.ts';

// The ports, one concern each, in ./ports/; these re-exports keep existing imports working.
export type { LeaseInfo } from '../core/lease.ts';
export type { SessionSnapshot } from '../core/session-snapshot.ts';
export type { StalledSession } from '../core/stalled-session.ts';
export type { StandingRule } from '../core/standing-rule.ts';
export type { AppState } from './ports/app-state.ts';
export type { AuditLog, AuditQuery } from './ports/audit-log.ts';
export type {
  ApproverCount,
  DecisionStats,
  DecisionStatsPort,
  DecisionTimes,
  ReasonCount,
  StatsQuery,
} from './ports/decision-stats.ts';
export type {
  ErasureCounts,
  PrincipalErasure,
  PrincipalErasureInput,
  PurgeBatch,
  PurgeCounts,
  Retention,
  RetentionCutoffs,
} from './ports/erasure.ts';
export type { LeaseFence, LeaseRenewal, LeaseRequest, Leases } from './ports/leases.ts';
export type {
  ExecutionFilter,
  ExecutionFinish,
  ExecutionStart,
  ExecutionStartResult,
  Ledger,
} from './ports/ledger.ts';
export type {
  ApprovalFilter,
  ApprovalUpdate,
  ApprovalUpdateResult,
  ApprovalWithSession,
  DecideOptions,
  DecideResult,
  DueQuery,
  PageTotal,
  RequestBook,
  RequestPage,
  RequestPageQuery,
  RequestSort,
  RuleBook,
  RunStart,
} from './ports/request-book.ts';
export type {
  ClaimChange,
  NudgeAdvance,
  NudgeDueQuery,
  RequestClaimResult,
  RequestTimers,
} from './ports/request-timers.ts';
// Server ports: not part of Store (see ports/server/); re-exported for existing imports.
export type {
  Delivery,
  DeliveryClaim,
  DeliveryEnqueue,
  DeliveryOutcome,
  DeliveryStatus,
  Outbox,
} from './ports/server/outbox.ts';
export type { WebSessionRecord, WebSessionStore } from './ports/server/web-session-store.ts';
export type { SessionLog, StalledSessionQuery, StepCommit } from './ports/session-log.ts';
export type { SessionTransfer } from './ports/session-transfer.ts';

/**
 * The one persistence port, composed of one port per concern (./ports/). Every backend
 * (memory, SQLite, PostgreSQL) implements it and passes the shared conformance suite in
 * `conformance/`.
 */
export interface Store
  extends SessionLog,
    Leases,
    RequestBook,
    RequestTimers,
    RuleBook,
    Ledger,
    AuditLog,
    AppState,
    SessionTransfer,
    PrincipalErasure,
    Retention {
  readonly kind: string;
  /**
   * Whether the process holding a lease is alive, seen from every process sharing the store
   * (src/liveness/). Only stores shared across hosts have one (PostgreSQL); without it, a
   * holder is judged on this host only (by its PID), and elsewhere its lease lapses after its term.
   */
  readonly liveness?: Liveness;

  close(): Promise<void>;
}
