import type { AuditEvent } from '../../core/audit.ts';
import type { ExecutionRecord, ExecutionStatus } from '../../core/execution.ts';
import type { JsonValue } from '../../core/json.ts';
import type { LeaseFence } from './leases.ts';

export interface ExecutionStart {
  requestId: string;
  session: string;
  callId: string;
  tool: string;
  args: JsonValue;
  idempotencyKey: string;
  at: string;
  /**
   * Fencing: the start succeeds only while this owner holds the session's lease at `nowMs`
   * (src/store/lease-rules.ts), checked in the same statement or transaction that inserts the
   * row, and before an existing row is looked at; otherwise it fails with SESSION_BUSY and
   * writes nothing, and the caller must not run the call. A run always passes its own;
   * without it (tests, tools that seed a ledger) the start is not fenced.
   */
  lease?: LeaseFence;
}

/** `created` is false when a ledger row for this request already existed (a retry or a crash). */
export interface ExecutionStartResult {
  created: boolean;
  record: ExecutionRecord;
}

export interface ExecutionFinish {
  status: Exclude<ExecutionStatus, 'started'>;
  result: JsonValue | null;
  at: string;
  audit?: AuditEvent[];
}

/**
 * Which ledger rows, in `startedAt, requestId` order. `after` and `limit` make it a keyset
 * page: rows after that position (exclusive), at most `limit` (1 to 1,000). SQL backends walk
 * the index `executions_by_started`, so a page reads `limit` rows however long the ledger.
 */
export interface ExecutionFilter {
  session?: string;
  status?: ExecutionStatus;
  after?: { startedAt: string; requestId: string };
  limit?: number;
}

/** The execution ledger: at most one run of an approved call, and how it ended. */
export interface Ledger {
  /**
   * Inserts the `started` row unless one exists for the request (then `created: false` and
   * the row as stored). With `start.lease`, fenced: SESSION_BUSY, nothing written, unless
   * that owner still holds the session's lease.
   */
  startExecution(start: ExecutionStart, audit?: AuditEvent[]): Promise<ExecutionStartResult>;
  /** Marks a started (or unknown) execution as finished. Returns the updated record. */
  finishExecution(requestId: string, finish: ExecutionFinish): Promise<ExecutionRecord>;
  getExecution(requestId: string): Promise<ExecutionRecord | null>;
  listExecutions(filter?: ExecutionFilter): Promise<ExecutionRecord[]>;
}
