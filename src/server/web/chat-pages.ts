import { NOTICE_POSTER } from '../../agent/keep-waiting.ts';
import type { StoredMessage } from '../../core/messages.ts';
import type { HttpApprovalView } from '../approval-views.ts';
import { html, type SafeHtml } from './html.ts';
import { visibleHtml } from './visible-html.ts';

/** One conversation of the signed-in customer; `session` is null until the first message. */
export interface ChatTarget {
  session: string | null;
  customer: string;
  agent: string;
}

/** What a visitor without a valid chat sign-in sees, on every chat page. */
export function chatSignedOutBody(problem: string): SafeHtml {
  return html`<h1>Sign in to the chat</h1>
  <p role="alert">${problem}</p>
  <p>The chat opens from a link that signs you in: open it from your account on the shop's site.
  Links last a limited time; if yours has run out, ask there for a new one.</p>
  <p class="hint">Trying the countersign demo? Open the Chat link that <code>npm start</code> printed.</p>`;
}

export function chatMissingBody(session: string): SafeHtml {
  return html`<h1>Not found</h1>
  <p role="alert">You have no conversation ${session}.</p>
  <p><a href="/chat">Start a new conversation</a></p>`;
}

/** What the customer sees: their words, the agent's replies, and whether a person is deciding. */
export function chatLog(messages: StoredMessage[], pending: HttpApprovalView[]): SafeHtml {
  const lines = messages.flatMap(({ message, seq }) => {
    // countersign's notice of kept calls' outcomes is for the model; its reply tells the customer.
    if (message.role === 'user' && message.by === NOTICE_POSTER) return [];
    if (message.role === 'user')
      return [
        html`<li class="msg user" data-seq="${seq}"><span class="role">You</span><p>${visibleHtml(message.text, { multiline: true })}</p></li>`,
      ];
    if (message.role === 'assistant' && message.text)
      return [
        html`<li class="msg assistant" data-seq="${seq}"><span class="role">Agent</span><p>${visibleHtml(message.text, { multiline: true })}</p></li>`,
      ];
    return [];
  });
  return html`${lines.length ? html`<ol class="conversation">${lines}</ol>` : html`<p class="hint">No messages yet. Try “Please cancel my order 1044.”</p>`}
  ${pending.map(
    (view) =>
      html`<p class="waiting" role="status"><strong>Waiting for approval</strong> by a person from support: ${visibleHtml(view.effect)}</p>`,
  )}`;
}

export function chatBody(target: ChatTarget, log: SafeHtml, csrf: string, agents: string[]): SafeHtml {
  const agentField =
    target.session === null && agents.length > 1
      ? html`<label for="agent">Agent</label>
        <select id="agent" name="agent">${agents.map((name) => html`<option${name === target.agent ? html` selected` : ''}>${name}</option>`)}</select>`
      : html`<input type="hidden" name="agent" value="${target.agent}">`;
  return html`<h1>Chat <span class="hint">as ${target.customer}${target.session ? html`, conversation ${target.session}` : ', new conversation'}</span></h1>
  <div id="chat-log" aria-live="polite"${target.session ? html` data-session="${target.session}"` : ''}>${log}</div>
  <form method="post" action="/chat/send" class="send">
    <input type="hidden" name="csrf" value="${csrf}">
    ${target.session ? html`<input type="hidden" name="session" value="${target.session}">` : ''}
    ${agentField}
    <label for="text">Message</label>
    <textarea id="text" name="text" rows="2" required maxlength="20000"></textarea>
    <button type="submit">Send</button>
  </form>
  ${target.session ? html`<p><a href="/chat">Start a new conversation</a></p>` : ''}`;
}
