import type { JsonValue } from './json.ts';

/**
 * countersign's own message format. It is versioned and converted to the AI SDK's prompt
 * type only at call time, so upgrading the SDK never breaks stored sessions.
 */
export const MESSAGE_FORMAT = 1;

export interface ToolCall {
  /** The model's call id; stable through the whole life of the call. */
  id: string;
  tool: string;
  /** Parsed arguments as the model sent them (possibly invalid for the tool's schema). */
  args: JsonValue;
}

export interface ToolResult {
  callId: string;
  tool: string;
  output: JsonValue;
  /** Set when the call did not do its job: invalid arguments, refused, rejected, failed. */
  isError?: boolean;
}

export type Message =
  /**
   * `by`: who posted it (the authenticated caller: a service token's name, the customer in the
   * chat, the CLI's --as). Requests raised while answering it record it as their raiser.
   */
  | { role: 'user'; text: string; by?: string }
  | { role: 'assistant'; text: string; calls?: ToolCall[] }
  | { role: 'tool'; results: ToolResult[] };

export interface StoredMessage {
  seq: number;
  at: string;
  message: Message;
}
