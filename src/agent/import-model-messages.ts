import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { userIdPattern } from '../core/ids.ts';
import type { JsonValue } from '../core/json.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeepMessage } from '../core/json-depth.ts';
import type { Message, ToolCall, ToolResult } from '../core/messages.ts';
import type { SessionSnapshot, Store } from '../store/store.ts';

/**
 * The parts of an AI SDK `ModelMessage` (ai v5 to v7) that a conversation carries, written
 * structurally so `ai` stays a devDependency. Anything else is named in the error.
 */
export type ImportableModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ReadonlyArray<{ type: string; text?: string }> }
  | {
      role: 'assistant';
      content:
        | string
        | ReadonlyArray<{
            type: string;
            text?: string;
            toolCallId?: string;
            toolName?: string;
            input?: unknown;
            providerExecuted?: boolean;
          }>;
    }
  | {
      role: 'tool';
      content: ReadonlyArray<{ type: string; toolCallId?: string; toolName?: string; output?: unknown }>;
    };

export interface ImportModelMessagesOptions {
  /** The agent (its name) the session belongs to. */
  agent: string | { readonly name: string };
  /** The customer the session belongs to; tools read it as ctx.principal. */
  principal?: string | null;
  /**
   * Tool calls in the history that have no result: 'refuse' (default) imports nothing and
   * names them; 'close' answers each with an error result saying it was never run, so the
   * model sees it did not happen. countersign never runs or asks about an imported call.
   */
  unanswered?: 'refuse' | 'close';
  /** Who imported it, for the audit trail (default 'unknown'). */
  by?: string;
  now?: () => Date;
}

export interface ImportedConversation {
  session: string;
  messages: number;
  /** System messages dropped: the agent's own instructions take their place. */
  droppedSystem: number;
  /** Calls closed with an error result (`unanswered: 'close'`). */
  closed: string[];
}

export const UNANSWERED_OUTPUT =
  'This call has no result in the imported conversation: it was not run by countersign. Call it again if it is still needed.';

/**
 * Starts a session from an existing AI SDK conversation. Everything is checked before a
 * byte is written; the session must not exist yet. Imported calls are history only: none is
 * run, and none becomes an approval request.
 */
export async function importModelMessages(
  store: Store,
  session: string,
  messages: ReadonlyArray<ImportableModelMessage>,
  options: ImportModelMessagesOptions,
): Promise<ImportedConversation> {
  const agent = typeof options.agent === 'string' ? options.agent : options.agent.name;
  if (!userIdPattern.test(session)) throw invalid(`the session id "${session}" is not valid`);
  if (!Array.isArray(messages)) throw invalid('messages must be an array of AI SDK ModelMessage objects');
  const converted = convert(messages, options.unanswered ?? 'refuse');
  const at = (options.now ?? (() => new Date()))().toISOString();
  const snapshot: SessionSnapshot = {
    session: {
      id: session,
      agent,
      principal: options.principal ?? null,
      createdAt: at,
      updatedAt: at,
      batch: null,
      messageCount: converted.messages.length,
    },
    messages: converted.messages.map((message, seq) => ({ seq, at, message })),
    approvals: [],
    executions: [],
  };
  await store.importSession(snapshot, [
    {
      kind: 'session.imported',
      session,
      requestId: null,
      actor: options.by ?? 'unknown',
      data: { source: 'ai-sdk', messages: converted.messages.length, closed: converted.closed },
    },
  ]);
  return {
    session,
    messages: converted.messages.length,
    droppedSystem: converted.droppedSystem,
    closed: converted.closed,
  };
}

interface Converted {
  messages: Message[];
  droppedSystem: number;
  closed: string[];
}

function convert(input: ReadonlyArray<ImportableModelMessage>, unanswered: 'refuse' | 'close'): Converted {
  const messages: Message[] = [];
  let droppedSystem = 0;
  /** Calls of the last assistant message still waiting for their result. */
  let open = new Map<string, ToolCall>();
  const closed: string[] = [];
  const known = new Set<string>();

  const settleOpen = (where: string) => {
    if (open.size === 0) return;
    if (unanswered === 'refuse') {
      const ids = [...open.values()].map((call) => `${call.tool} (${call.id})`).join(', ');
      throw invalid(`${where}: the tool call ${ids} has no result`, {
        hint: "Add its tool result, or pass unanswered: 'close' to answer it as never run. Nothing was imported.",
      });
    }
    const results: ToolResult[] = [...open.values()].map((call) => ({
      callId: call.id,
      tool: call.tool,
      output: UNANSWERED_OUTPUT,
      isError: true,
    }));
    closed.push(...open.keys());
    const last = messages.at(-1);
    if (last?.role === 'tool') last.results.push(...results);
    else messages.push({ role: 'tool', results });
    open = new Map();
  };

  input.forEach((message, index) => {
    const where = `message ${index + 1}`;
    if (typeof message !== 'object' || message === null) throw invalid(`${where} is not an object`);
    switch (message.role) {
      case 'system':
        droppedSystem++;
        return;
      case 'user':
        settleOpen(where);
        messages.push({ role: 'user', text: textOf(message.content, where) });
        return;
      case 'assistant': {
        settleOpen(where);
        const calls: ToolCall[] = [];
        let text = '';
        const parts =
          typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
        if (!Array.isArray(parts)) throw invalid(`${where} (assistant) has no content`);
        for (const part of parts) {
          if (part.type === 'text') text += String(part.text ?? '');
          else if (part.type === 'tool-call') {
            // The provider ran these itself; their results come in the same message.
            if (part.providerExecuted) continue;
            if (typeof part.toolCallId !== 'string' || typeof part.toolName !== 'string')
              throw invalid(`${where}: a tool-call part lacks toolCallId or toolName`);
            if (known.has(part.toolCallId))
              throw invalid(`${where}: the tool call id ${part.toolCallId} is used twice`);
            known.add(part.toolCallId);
            const call = { id: part.toolCallId, tool: part.toolName, args: jsonOf(part.input, where) };
            calls.push(call);
            open.set(call.id, call);
          } else if (!['reasoning', 'tool-result', 'tool-approval-request', 'source'].includes(part.type)) {
            throw unsupported(where, part.type);
          }
        }
        messages.push(calls.length > 0 ? { role: 'assistant', text, calls } : { role: 'assistant', text });
        return;
      }
      case 'tool': {
        if (!Array.isArray(message.content)) throw invalid(`${where} (tool) has no content`);
        const results: ToolResult[] = [];
        for (const part of message.content) {
          if (part.type === 'tool-approval-response') continue;
          if (part.type !== 'tool-result') throw unsupported(where, part.type);
          const call = typeof part.toolCallId === 'string' ? open.get(part.toolCallId) : undefined;
          if (!call)
            throw invalid(
              `${where}: the tool result ${String(part.toolCallId)} answers no open call before it`,
            );
          open.delete(call.id);
          results.push({ callId: call.id, tool: call.tool, ...resultOf(part.output, where) });
        }
        if (results.length === 0) return;
        const last = messages.at(-1);
        if (last?.role === 'tool') last.results.push(...results);
        else messages.push({ role: 'tool', results });
        return;
      }
      default:
        throw invalid(`${where} has the role ${JSON.stringify((message as { role?: unknown }).role)}`, {
          hint: 'Pass AI SDK ModelMessage objects (roles system, user, assistant, tool). Nothing was imported.',
        });
    }
  });
  settleOpen('at the end');
  return { messages, droppedSystem, closed };
}

function textOf(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(`${where} (user) has no content`);
  return content
    .map((part: { type?: unknown; text?: unknown }) => {
      if (part.type !== 'text') throw unsupported(where, String(part.type));
      return String(part.text ?? '');
    })
    .join('');
}

/** AI SDK tool outputs; errors and denials keep their text and are marked as errors. */
function resultOf(output: unknown, where: string): { output: JsonValue; isError?: true } {
  const { type, value, reason } = (output ?? {}) as { type?: unknown; value?: unknown; reason?: unknown };
  switch (type) {
    case 'text':
      return { output: String(value) };
    case 'json':
      return { output: jsonOf(value, where) };
    case 'error-text':
      return { output: String(value), isError: true };
    case 'error-json':
      return { output: jsonOf(value, where), isError: true };
    case 'execution-denied':
      return { output: typeof reason === 'string' ? reason : 'The call was denied.', isError: true };
    case 'content':
      if (Array.isArray(value) && value.every((part: { type?: unknown }) => part.type === 'text'))
        return { output: value.map((part: { text?: unknown }) => String(part.text)).join('') };
      throw unsupported(where, 'tool output content other than text');
    default:
      throw invalid(
        `${where}: a tool result has no output of a known type (text, json, error-text, error-json, execution-denied)`,
      );
  }
}

/**
 * Arguments and outputs as JSON, held to MAX_JSON_DEPTH like every JSON value a store takes
 * in (the store's import refuses deeper ones too, but in terms of a snapshot, not of the
 * conversation handed in here).
 */
function jsonOf(value: unknown, where: string): JsonValue {
  if (value === undefined) return {};
  let json: JsonValue;
  try {
    json = JSON.parse(JSON.stringify(value)) as JsonValue;
  } catch {
    throw invalid(`${where}: a value is not JSON`);
  }
  if (nestsDeeperThan(json, MAX_JSON_DEPTH))
    throw invalid(`${where}: a value is nested too deeply`, {
      hint: `${tooDeepMessage('It')} Nothing was imported.`,
    });
  return json;
}

function unsupported(where: string, type: string): InvalidInputError {
  return invalid(`${where} holds a "${type}" part, which countersign does not store`, {
    hint: 'countersign sessions hold text, tool calls and their results; remove files and images first. Nothing was imported.',
  });
}

function invalid(problem: string, options: { hint?: string } = {}): InvalidInputError {
  return new InvalidInputError(`Cannot import the conversation: ${problem}.`, {
    hint: options.hint ?? 'Nothing was imported.',
  });
}
