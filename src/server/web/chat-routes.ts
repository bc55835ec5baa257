import type { Context, Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { newId, userIdPattern } from '../../core/ids.ts';
import type { SessionRecord } from '../../core/session.ts';
import { queryApprovals } from '../approval-views.ts';
import { csrfMatches, sameOrigin } from '../auth/caller.ts';
import { CHAT_COOKIE, CHAT_COOKIE_PATH, type ChatSignIn, type ChatSignIns } from '../auth/chat-sign-ins.ts';
import { eventStream, type StreamRegistry, sessionOf } from '../events/event-stream.ts';
import type { ServerContext, ServerEnv } from '../server-context.ts';
import { type ChatTarget, chatBody, chatLog, chatMissingBody, chatSignedOutBody } from './chat-pages.ts';
import type { Flash } from './flash-store.ts';
import type { SafeHtml } from './html.ts';
import { page } from './layout.ts';
import { uiChatRoutes } from './ui-chat-routes.ts';
import { formText, withFlash } from './web-guard.ts';

/**
 * The customer side. The host application signs its customers in and hands them a link with
 * a customer token; countersign trusts nothing else about who the customer is. A customer
 * reaches only sessions whose principal they are, and starts new ones under ids it picks.
 * The inbox's sign-ins (approvers) play no part here.
 */
export function chatRoutes(
  app: Hono<ServerEnv>,
  ctx: ServerContext,
  streams: StreamRegistry,
  signIns: ChatSignIns,
): void {
  const render = (
    c: Context<ServerEnv>,
    title: string,
    body: SafeHtml,
    status: ContentfulStatusCode = 200,
    flash: Flash | null = null,
  ) => {
    // The customer's own conversation: not for shared caches or the back button of the next person.
    c.header('cache-control', 'no-store');
    return c.html(page({ title, section: 'chat', body, flash, scripts: ['chat.js'] }), status);
  };
  const signedOut = (c: Context<ServerEnv>, problem: string, status: 401 | 403 = 401) =>
    render(c, 'Sign in to the chat', chatSignedOutBody(problem), status);
  const signedIn = (c: Context<ServerEnv>) => signIns.read(getCookie(c, CHAT_COOKIE));
  /**
   * Another customer's conversation answers exactly like one that does not exist (404):
   * a 403 would confirm to a guesser that a session id such as `demo` is in use.
   */
  const ownSession = async (signIn: ChatSignIn, id: string): Promise<SessionRecord | null> => {
    if (!userIdPattern.test(id)) return null;
    const session = await ctx.store.getSession(id);
    return session?.principal === signIn.customer ? session : null;
  };
  const log = async (session: string | null): Promise<SafeHtml> =>
    session === null
      ? chatLog([], [])
      : chatLog(
          await ctx.store.loadMessages(session),
          await queryApprovals(ctx.requestBook, ctx, { status: 'pending', session }, ctx.now()),
        );
  const flashOwner = (signIn: ChatSignIn, session: string | null) =>
    `chat:${signIn.customer}:${session ?? ''}`;
  const chatPath = (session: string | null) =>
    session === null ? '/chat' : `/chat?session=${encodeURIComponent(session)}`;

  app.get('/chat', async (c) => {
    const token = c.req.query('token');
    if (token !== undefined) {
      // Only a page the customer opens signs them in, never an image or frame on another site.
      const dest = c.req.header('sec-fetch-dest');
      if (dest !== undefined && dest !== 'document')
        return signedOut(c, 'A sign-in link works only when it is opened as a page.', 403);
      const exchanged = await signIns.exchange(token);
      if (!exchanged.ok) return signedOut(c, exchanged.problem);
      // Lax, not Strict: the link comes from the host application's site, and a Strict
      // cookie set there would be withheld from the redirect below and from every later
      // link into the chat. Lax still keeps it off cross-site posts, frames and fetches.
      setCookie(c, CHAT_COOKIE, exchanged.cookie, {
        httpOnly: true,
        sameSite: 'Lax',
        path: CHAT_COOKIE_PATH,
        secure: ctx.secureCookies,
        maxAge: Math.max(1, Math.floor((exchanged.signIn.expiresAtMs - ctx.now().getTime()) / 1000)),
      });
      c.header('cache-control', 'no-store');
      // The token leaves the address bar, the history and any later Referer.
      const session = c.req.query('session');
      return c.redirect(chatPath(session && userIdPattern.test(session) ? session : null), 303);
    }
    const signIn = await signedIn(c);
    if (!signIn) return signedOut(c, 'You are not signed in to the chat.');
    const agents = ctx.agents.all.map((agent) => agent.name);
    const id = c.req.query('session');
    if (!id) {
      const flash = ctx.flashes.take(c.req.query('flash'), flashOwner(signIn, null));
      const target: ChatTarget = { session: null, customer: signIn.customer, agent: ctx.agents.default.name };
      return render(c, 'Customer chat', chatBody(target, await log(null), signIn.csrf, agents), 200, flash);
    }
    const session = await ownSession(signIn, id);
    if (!session) return render(c, 'Not found', chatMissingBody(id), 404);
    const flash = ctx.flashes.take(c.req.query('flash'), flashOwner(signIn, session.id));
    const target: ChatTarget = { session: session.id, customer: signIn.customer, agent: session.agent };
    const body = chatBody(target, await log(session.id), signIn.csrf, agents);
    return render(c, `Chat ${session.id}`, body, 200, flash);
  });

  app.get('/chat/log', async (c) => {
    const signIn = await signedIn(c);
    if (!signIn) return c.body(null, 401);
    const session = await ownSession(signIn, c.req.query('session') ?? '');
    if (!session) return c.body(null, 404);
    c.header('cache-control', 'no-store');
    return c.html((await log(session.id)).value);
  });

  // The customer's page learns only that something happened in its own conversation.
  app.get('/chat/events', async (c) => {
    const signIn = await signedIn(c);
    if (!signIn) return c.body(null, 401);
    const session = await ownSession(signIn, c.req.query('session') ?? '');
    if (!session) return c.body(null, 404);
    return eventStream(c, ctx.feed, streams, {
      filter: (event) => sessionOf(event) === session.id,
      shape: (event) => ({ type: event.type, session: session.id }),
    });
  });

  app.post('/chat/send', async (c) => {
    const signIn = await signedIn(c);
    if (!signIn) return signedOut(c, 'You are not signed in to the chat, so the message was not sent.');
    const form = await c.req.parseBody();
    if (!sameOrigin(c, ctx.publicOrigin) || !csrfMatches(signIn.csrf, form.csrf))
      return render(c, 'Not allowed', chatSignedOutBody('This message did not come from this site.'), 403);
    const text = formText(form.text);
    const asked = formText(form.session);
    let session: string;
    let agent: string;
    if (asked) {
      const own = await ownSession(signIn, asked);
      if (!own) return render(c, 'Not found', chatMissingBody(asked), 404);
      session = own.id;
      agent = own.agent;
    } else {
      if (text === '') return c.redirect('/chat', 303);
      // New conversations get ids nobody can guess or claim ahead of the customer.
      session = newId('chat');
      agent = formText(form.agent) || ctx.agents.default.name;
    }
    const back = chatPath(session);
    if (text === '') return c.redirect(back, 303);
    try {
      // The customer posts for themselves: they raise what follows, and may not decide it.
      await ctx.agents.get(agent).chat(session, text, { principal: signIn.customer, by: signIn.customer });
    } catch (error) {
      if (!CountersignError.is(error)) throw error;
      const created = asked !== '' || (await ctx.store.getSession(session)) !== null;
      const id = ctx.flashes.put(flashOwner(signIn, created ? session : null), {
        kind: 'error',
        text: error.message,
      });
      return c.redirect(withFlash(created ? back : '/chat', id), 303);
    }
    return c.redirect(back, 303);
  });

  // The same customers, for an AI SDK UI page (useChat) instead of these server-rendered ones.
  uiChatRoutes(app, ctx, signIns);
}
