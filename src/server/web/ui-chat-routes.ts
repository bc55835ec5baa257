import type { Context, Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import type { Agent } from '../../agent/create-agent.ts';
import type { TurnResult } from '../../agent/views.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { userIdPattern } from '../../core/ids.ts';
import type { StoredMessage } from '../../core/messages.ts';
import { queryApprovals } from '../approval-views.ts';
import { sameOrigin } from '../auth/caller.ts';
import { CHAT_COOKIE, type ChatSignIns } from '../auth/chat-sign-ins.ts';
import type { ServerContext, ServerEnv } from '../server-context.ts';
import {
  repliesAfter,
  UI_STREAM_HEADERS,
  type UiChunk,
  uiChatRequest,
  uiMessageStream,
  userText,
  waitingParts,
} from './ui-message-stream.ts';

export const UI_CHAT_PATH = '/chat/api/ui';

/**
 * The customer chat for an AI SDK UI (`useChat` from `@ai-sdk/react`): the chat id is the
 * session, the last user message is the new one, the reply streams as the model writes it, and
 * a call that needs a person appears as the SDK's approval part. The decision is an
 * approver's (the inbox, POST /v1/requests/{id}/decision); the page's own
 * `addToolApprovalResponse` is refused, unless the agent lets customers approve their own
 * calls (`selfApproval`). A later request of the chat shows the results of what was decided.
 */
export function uiChatRoutes(app: Hono<ServerEnv>, ctx: ServerContext, signIns: ChatSignIns): void {
  const refuse = (c: Context<ServerEnv>, status: 400 | 401 | 403 | 404, code: string, message: string) =>
    c.json({ error: { code, message } }, status);

  app.post(UI_CHAT_PATH, async (c) => {
    const signIn = await signIns.read(getCookie(c, CHAT_COOKIE));
    if (!signIn) return refuse(c, 401, 'UNAUTHENTICATED', 'You are not signed in to the chat.');
    // The cookie is ambient: only this site's pages may post with it (a JSON body needs a
    // preflight cross-site, and a text/plain form post is not JSON here).
    if (!sameOrigin(c, ctx.publicOrigin) || !c.req.header('content-type')?.startsWith('application/json'))
      return refuse(c, 403, 'FORBIDDEN', 'This message did not come from this site.');
    const parsed = uiChatRequest.safeParse(await c.req.json().catch(() => null));
    if (!parsed.success)
      return refuse(c, 400, 'INVALID_INPUT', 'Send the body useChat sends: { id, messages: [...] }.');
    const { id, messages } = parsed.data;
    if (!userIdPattern.test(id))
      return refuse(c, 400, 'INVALID_INPUT', 'The chat id must use letters, digits and . _ : @ - only.');
    const existing = await ctx.store.getSession(id);
    // Another customer's conversation answers like one that does not exist.
    if (existing && existing.principal !== signIn.customer)
      return refuse(c, 404, 'NOT_FOUND', `There is no chat ${id}.`);
    const agent: Agent = existing ? ctx.agents.get(existing.agent) : ctx.agents.default;
    const last = messages[messages.length - 1]!;
    const shown = last.role === 'assistant' ? waitingParts(last.parts) : [];

    // The page's own answers to approval parts: refused before anything streams, unless the
    // agent lets the customer approve their own calls. Answers to requests decided meanwhile
    // (by an approver) are stale and only ask for what happened.
    const answers: Array<{ request: string; approved: boolean; reason?: string }> = [];
    for (const part of shown) {
      if (part.state !== 'approval-responded' || part.approval.approved === undefined) continue;
      const request = await ctx.requestBook.getApproval(part.approval.id);
      if (!request || request.session !== id || request.status !== 'pending') continue;
      if (!agent.options.selfApproval)
        return refuse(
          c,
          403,
          'FORBIDDEN',
          `Request ${request.id} is decided by an approver in the inbox, not from the chat; its result appears here once it is decided.`,
        );
      answers.push({
        request: request.id,
        approved: part.approval.approved,
        ...(part.approval.reason !== undefined ? { reason: part.approval.reason } : {}),
      });
    }

    const body = uiMessageStream(async (write) => {
      write({ type: 'start' });
      const known = new Set(shown.map((part) => part.approval.id));
      try {
        if (last.role === 'user') {
          await chatTurn(agent, id, userText(last.parts), signIn.customer, write);
        } else {
          for (const answer of answers) {
            const decision = {
              approved: answer.approved,
              ...(answer.reason !== undefined ? { reason: answer.reason } : {}),
            };
            await ctx.requests.decide(
              answer.request,
              decision,
              { by: signIn.customer },
              { only: 'tool-call' },
            );
          }
          if (shown.length > 0) await showResults(ctx, id, shown, write);
        }
        await showWaiting(ctx, id, known, write);
      } catch (error) {
        // A typed refusal or failure says what happened; anything else is not the customer's to read.
        write({ type: 'error', errorText: CountersignError.is(error) ? error.message : 'The turn failed.' });
      }
      write({ type: 'finish' });
    });
    return c.body(body, 200, { ...UI_STREAM_HEADERS });
  });
}

/** Runs the customer's message, the reply streaming as one text part. */
async function chatTurn(
  agent: Agent,
  session: string,
  text: string,
  customer: string,
  write: (chunk: UiChunk) => void,
): Promise<TurnResult> {
  let open: string | null = null;
  let parts = 0;
  const turn = await agent.chat(session, text, {
    principal: customer,
    by: customer,
    onText: (delta) => {
      if (open === null) {
        open = `text-${parts++}`;
        write({ type: 'text-start', id: open });
      }
      write({ type: 'text-delta', id: open, delta });
    },
  });
  if (open !== null) write({ type: 'text-end', id: open });
  return turn;
}

/** For each call the page shows waiting and a person has decided: its result, then what the agent said. */
async function showResults(
  ctx: ServerContext,
  session: string,
  shown: ReadonlyArray<{ toolCallId?: string | undefined; approval: { id: string } }>,
  write: (chunk: UiChunk) => void,
): Promise<void> {
  const messages: StoredMessage[] = await ctx.store.loadMessages(session);
  const decided = new Set<string>();
  for (const part of shown) {
    const request = await ctx.requestBook.getApproval(part.approval.id);
    if (!request || request.session !== session || request.status === 'pending') continue;
    const toolCallId = part.toolCallId ?? request.callId;
    const result = resultOf(messages, request.callId);
    if (!result) continue;
    decided.add(request.callId);
    if (request.status === 'rejected') write({ type: 'tool-output-denied', toolCallId });
    else if (result.isError)
      write({ type: 'tool-output-error', toolCallId, errorText: JSON.stringify(result.output) });
    else write({ type: 'tool-output-available', toolCallId, output: result.output });
  }
  repliesAfter(messages, decided).forEach((reply, index) => {
    const id = `reply-${index}`;
    write({ type: 'text-start', id });
    write({ type: 'text-delta', id, delta: reply });
    write({ type: 'text-end', id });
  });
}

/** Requests of the session still waiting that the page has not shown yet, as approval parts. */
async function showWaiting(
  ctx: ServerContext,
  session: string,
  known: ReadonlySet<string>,
  write: (chunk: UiChunk) => void,
): Promise<void> {
  const waiting = await queryApprovals(ctx.requestBook, ctx, { status: 'pending', session }, ctx.now());
  for (const request of waiting) {
    if (known.has(request.id) || request.kind !== 'tool-call') continue;
    // A tool call always has the model's call id; the page ties the approval to it.
    const toolCallId = request.callId ?? request.id;
    write({
      type: 'tool-input-available',
      toolCallId,
      toolName: request.tool,
      input: request.args,
      dynamic: true,
      title: request.effect,
    });
    write({
      type: 'tool-approval-request',
      approvalId: request.id,
      toolCallId,
      reason: request.effect,
    });
  }
}

function resultOf(messages: readonly StoredMessage[], callId: string) {
  for (const stored of messages) {
    const message = stored.message;
    if (message.role !== 'tool') continue;
    const found = message.results.find((result) => result.callId === callId);
    if (found) return found;
  }
  return null;
}
