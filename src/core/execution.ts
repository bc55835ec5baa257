import type { JsonValue } from './json.ts';

export type ExecutionStatus = 'started' | 'succeeded' | 'failed' | 'unknown';

/** One ledger row per approved call: written before the tool runs and after it returns. */
export interface ExecutionRecord {
  requestId: string;
  session: string;
  callId: string;
  tool: string;
  args: JsonValue;
  idempotencyKey: string;
  status: ExecutionStatus;
  result: JsonValue | null;
  attempts: number;
  startedAt: string;
  finishedAt: string | null;
}
