import type { UIMessageChunk } from 'ai';
import { z } from 'zod';
import type { StoredMessage } from '../../core/messages.ts';

/**
 * The AI SDK's UI message stream protocol (what `useChat` reads), written here rather than with
 * the `ai` package's createUIMessageStream: `ai` is a development dependency only, and the
 * server's runtime should not load a whole agent framework to print a few kinds of JSON line.
 * The chunks are typed by `ai`'s own UIMessageChunk (a type-only import, erased at run time),
 * so a change of the protocol in the SDK fails the type check here.
 */
export type UiChunk = UIMessageChunk;

/** The response headers the SDK's createUIMessageStreamResponse sets (UI_MESSAGE_STREAM_HEADERS). */
export const UI_STREAM_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-store',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
};

/**
 * A readable SSE body: `data: <chunk JSON>` per chunk, then `data: [DONE]`. `produce` writes
 * chunks as they happen (text deltas while the model generates); the stream ends when it settles.
 */
export function uiMessageStream(
  produce: (write: (chunk: UiChunk) => void) => Promise<void>,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const write = (chunk: UiChunk) =>
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
      try {
        await produce(write);
      } finally {
        controller.enqueue(encoder.encode('data: [DONE]\n\n'));
        controller.close();
      }
    },
  });
}

/** A tool part as useChat sends it back: only what the route reads of it. */
const toolPart = z.looseObject({
  type: z.string(),
  toolCallId: z.string().optional(),
  state: z.string().optional(),
  approval: z
    .looseObject({ id: z.string(), approved: z.boolean().optional(), reason: z.string().optional() })
    .optional(),
  text: z.string().optional(),
});

/** The body useChat's DefaultChatTransport posts: the chat id and the whole conversation. */
export const uiChatRequest = z.looseObject({
  id: z.string(),
  messages: z
    .array(
      z.looseObject({
        id: z.string(),
        role: z.enum(['system', 'user', 'assistant']),
        parts: z.array(toolPart),
      }),
    )
    .min(1),
});
export type UiChatRequest = z.infer<typeof uiChatRequest>;
export type UiPart = z.infer<typeof toolPart>;

/** The text the customer typed: the text parts of a user message. */
export function userText(parts: readonly UiPart[]): string {
  return parts
    .filter((part) => part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text)
    .join('\n')
    .trim();
}

/** Tool parts the page shows as waiting for a decision (asked, or answered by the client). */
export function waitingParts(parts: readonly UiPart[]): Array<UiPart & { approval: { id: string } }> {
  return parts.filter(
    (part): part is UiPart & { approval: { id: string } } =>
      part.approval !== undefined &&
      (part.state === 'approval-requested' || part.state === 'approval-responded'),
  );
}

/**
 * What the agent said after the last of these calls' results was stored: the reply the page
 * has not seen when a person decided elsewhere (the inbox, the API).
 */
export function repliesAfter(messages: readonly StoredMessage[], callIds: ReadonlySet<string>): string[] {
  let from = -1;
  messages.forEach((stored, index) => {
    const message = stored.message;
    if (message.role === 'tool' && message.results.some((result) => callIds.has(result.callId))) from = index;
  });
  if (from === -1) return [];
  const replies: string[] = [];
  for (const stored of messages.slice(from + 1)) {
    const message = stored.message;
    if (message.role === 'assistant' && message.text.trim() !== '') replies.push(message.text);
  }
  return replies;
}
