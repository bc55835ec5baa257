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
  /**
   * Calls of earlier responses whose requests a new customer message kept waiting (the
   * tool's or agent's `onNewMessage: 'keep'`): the model was told they still wait, and is
   * told their outcome in a later message once decided. A batch may hold only these
   * (`calls` empty). Absent when none.
   */
  kept?: KeptCall[];
}

/** A call whose request kept waiting through a new message (see OpenBatch.kept). */
export interface KeptCall {
  callId: string;
  tool: string;
  args: JsonValue;
  approvalId: string;
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
