import type { CheckpointStore } from '../checkpoint-store.ts';
import type { AppState } from '../ports/app-state.ts';
import type { PrincipalErasure, Retention } from '../ports/erasure.ts';

/**
 * What a SQL backend's checkpoint half implements itself. The rest of `CheckpointStore` it
 * shares with the `Store` on the same file or schema: app state (the `state` table), the
 * request book (port requests are rows of `approvals`, read, paged and decided like tool
 * calls) and erasure and retention, which cover the whole file or schema.
 */
export type SqlCheckpointMethods = Omit<
  CheckpointStore,
  | 'kind'
  | 'keepsAudit'
  | 'close'
  | keyof AppState
  | 'getApproval'
  | 'listApprovals'
  | 'pageRequests'
  | 'decisionStats'
  | 'listDue'
  | 'decide'
  | 'recordApproval'
  | keyof PrincipalErasure
  | keyof Retention
>;
