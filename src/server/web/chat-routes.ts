import { randomBytes } from 'node:crypto';
import type { Context, Hono } from 'hono';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { userIdPattern } from '../../core/ids.ts';
import { queryApprovals } from '../approval-views.ts';
import { sameOrigin } from '../auth/caller.ts';
import { eventStream, type StreamRegistry, sessionOf } from '../events/event-stream.ts';
import type { ServerContext, ServerEnv } from '../server-context.ts';
import { type ChatTarget, chatBody, chatLog, chatQuery, chatStartBody } from './chat-pages.ts';
import { errorPage } from './error-page.ts';
import type { SafeHtml } from './html.ts';
import { page } from './layout.ts';
import { formText, withFlash } from './web-guard.ts';

/**
 * The customer side, for demos: the customer id is whatever the page is given, so this is
 * served only when the server is started with the chat enabled (`serve --chat`).
 */
export function chatRoutes(
  app: Hono<ServerEnv>,
  ctx: ServerContext,
  streams: StreamRegistry,
  demoCustomer: string,
): void {
  const target = (source: Record<string, unknown>): ChatTarget | null => {
    const session = formText(source.session);
    const user = formText(source.user);
    const agent = formText(source.agent) || ctx.agents.default.name;
    if (!userIdPattern.test(session) || !userIdPattern.test(user)) return null;
    if (!ctx.agents.all.some((candidate) => candidate.name === agent)) return null;
    return { session, user, agent };
  };
  const log = async (chat: ChatTarget): Promise<SafeHtml> =>
    chatLog(
      (await ctx.store.getSession(chat.session)) ? await ctx.store.loadMessages(chat.session) : [],
      await queryApprovals(ctx.store, ctx.agents, { status: 'pending', session: chat.session }, ctx.now()),
    );
  const render = (
    c: Context<ServerEnv>,
    title: string,
    body: SafeHtml,
    flash: ReturnType<typeof ctx.flashes.take>,
  ) => c.html(page({ title, section: 'chat', body, flash, scripts: ['chat.js'] }));

  app.get('/chat', async (c) => {
    const chat = target(c.req.query());
    if (!chat) {
      const defaults = {
        session: `web-${randomBytes(4).toString('hex')}`,
        user: demoCustomer,
        agent: ctx.agents.default.name,
      };
      return render(
        c,
        'Customer chat',
        chatStartBody(
          defaults,
          ctx.agents.all.map((agent) => agent.name),
        ),
        null,
      );
    }
    const flash = ctx.flashes.take(c.req.query('flash'), `chat:${chat.session}`);
    return render(c, `Chat ${chat.session}`, chatBody(chat, await log(chat)), flash);
  });

  app.get('/chat/log', async (c) => {
    const chat = target(c.req.query());
    if (!chat) return c.body(null, 400);
    c.header('cache-control', 'no-store');
    return c.html((await log(chat)).value);
  });

  // The customer's page learns only that something happened in its conversation.
  app.get('/chat/events', (c) => {
    const session = c.req.query('session') ?? '';
    if (!userIdPattern.test(session)) return c.body(null, 400);
    return eventStream(c, ctx.events, streams, {
      filter: (event) => sessionOf(event) === session,
      shape: (event) => ({ type: event.type, session }),
    });
  });

  app.post('/chat/send', async (c) => {
    if (!sameOrigin(c, ctx.publicOrigin))
      return errorPage(c, 403, 'This message did not come from this site.');
    const form = await c.req.parseBody();
    const chat = target(form);
    if (!chat) return errorPage(c, 400, 'Choose a valid conversation and customer id.');
    const back = `/chat?${chatQuery(chat)}`;
    const text = formText(form.text);
    if (text === '') return c.redirect(back, 303);
    try {
      await ctx.agents.get(chat.agent).chat(chat.session, text, { principal: chat.user });
      return c.redirect(back, 303);
    } catch (error) {
      if (!CountersignError.is(error)) throw error;
      const id = ctx.flashes.put(`chat:${chat.session}`, { kind: 'error', text: error.message });
      return c.redirect(withFlash(back, id), 303);
    }
  });
}
