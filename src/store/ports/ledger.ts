import type { AuditEvent } from '../../core/audit.ts';
import type { ExecutionRecord, ExecutionStatus } from '../../core/execution.ts';
import type { JsonValue } from '../../core/json.ts';

export interface ExecutionStart {
  requestId: string;
  session: string;
  callId: string;
  tool: string;
  args: JsonValue;
  idempotencyKey: string;
  at: string;
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
  startExecution(start: ExecutionStart, audit?: AuditEvent[]): Promise<ExecutionStartResult>;
  /** Marks a started (or unknown) execution as finished. Returns the updated record. */
  finishExecution(requestId: string, finish: ExecutionFinish): Promise<ExecutionRecord>;
  getExecution(requestId: string): Promise<ExecutionRecord | null>;
  listExecutions(filter?: ExecutionFilter): Promise<ExecutionRecord[]>;
}
