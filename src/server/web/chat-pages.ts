import type { StoredMessage } from '../../core/messages.ts';
import type { HttpApprovalView } from '../approval-views.ts';
import { html, type SafeHtml } from './html.ts';
import { visibleHtml } from './visible-html.ts';

export interface ChatTarget {
  session: string;
  user: string;
  agent: string;
}

export function chatQuery(target: ChatTarget): string {
  return new URLSearchParams({ session: target.session, user: target.user, agent: target.agent }).toString();
}

export function chatStartBody(defaults: ChatTarget, agents: string[]): SafeHtml {
  return html`<h1>Customer chat</h1>
  <p class="hint">A demo page: pick a conversation and the customer you are. Anyone who can open this page can speak as any customer, so production servers leave it off.</p>
  <form method="get" action="/chat" class="login">
    <label for="session">Conversation (session id)</label>
    <input id="session" name="session" value="${defaults.session}" required pattern="[A-Za-z0-9][A-Za-z0-9._:@\\-]{0,127}">
    <label for="user">Customer id</label>
    <input id="user" name="user" value="${defaults.user}" required pattern="[A-Za-z0-9][A-Za-z0-9._:@\\-]{0,127}">
    ${
      agents.length > 1
        ? html`<label for="agent">Agent</label>
          <select id="agent" name="agent">${agents.map((name) => html`<option${name === defaults.agent ? html` selected` : ''}>${name}</option>`)}</select>`
        : html`<input type="hidden" name="agent" value="${defaults.agent}">`
    }
    <button type="submit">Start chatting</button>
  </form>`;
}

/** What the customer sees: their words, the agent's replies, and whether a person is deciding. */
export function chatLog(messages: StoredMessage[], pending: HttpApprovalView[]): SafeHtml {
  const lines = messages.flatMap(({ message, seq }) => {
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

export function chatBody(target: ChatTarget, log: SafeHtml): SafeHtml {
  return html`<h1>Chat <span class="hint">as ${target.user}, conversation ${target.session}</span></h1>
  <div id="chat-log" aria-live="polite" data-query="${chatQuery(target)}">${log}</div>
  <form method="post" action="/chat/send" class="send">
    <input type="hidden" name="session" value="${target.session}">
    <input type="hidden" name="user" value="${target.user}">
    <input type="hidden" name="agent" value="${target.agent}">
    <label for="text">Message</label>
    <textarea id="text" name="text" rows="2" required maxlength="20000"></textarea>
    <button type="submit">Send</button>
  </form>
  <p><a href="/chat">Switch conversation or customer</a></p>`;
}
