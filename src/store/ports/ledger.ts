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

/** The execution ledger: at most one run of an approved call, and how it ended. */
export interface Ledger {
  startExecution(start: ExecutionStart, audit?: AuditEvent[]): Promise<ExecutionStartResult>;
  /** Marks a started (or unknown) execution as finished. Returns the updated record. */
  finishExecution(requestId: string, finish: ExecutionFinish): Promise<ExecutionRecord>;
  getExecution(requestId: string): Promise<ExecutionRecord | null>;
  listExecutions(filter?: { session?: string; status?: ExecutionStatus }): Promise<ExecutionRecord[]>;
}
