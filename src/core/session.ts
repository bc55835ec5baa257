import type { JsonValue } from './json.ts';

/** How one proposed call of a model response is handled once every decision is in. */
export type CallDisposition =
  | { kind: 'run' }
  | { kind: 'approval'; approvalId: string }
  | { kind: 'error'; output: string }
  /** Waits behind another request when requests surface one at a time; raised later. */
  | { kind: 'queued' };

export interface BatchCall {
  callId: string;
  tool: string;
  args: JsonValue;
  disposition: CallDisposition;
}

/**
 * The calls of the last model response that have not produced results yet. It exists only
 * while approvals wait; read calls proposed beside a write wait here too and run with it.
 */
export interface OpenBatch {
  /** seq of the assistant message that proposed these calls */
  messageSeq: number;
  calls: BatchCall[];
}

export interface SessionRecord {
  id: string;
  agent: string;
  principal: string | null;
  createdAt: string;
  updatedAt: string;
  /** Number of stored messages; the next message gets this seq. */
  messageCount: number;
  batch: OpenBatch | null;
}
