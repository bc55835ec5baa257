import type { Hono } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import { clientAddress, csrfMatches, SESSION_COOKIE, sameOrigin } from '../auth/caller.ts';
import { callerOf, type ServerContext, type ServerEnv } from '../server-context.ts';
import { errorPage } from './error-page.ts';
import { loginBody } from './inbox-pages.ts';
import { page } from './layout.ts';
import { safeNext } from './safe-next.ts';
import { formText } from './web-guard.ts';

export const WEB_SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export function authRoutes(app: Hono<ServerEnv>, ctx: ServerContext): void {
  app.get('/login', (c) => {
    const next = safeNext(c.req.query('next'));
    if (callerOf(c)) return c.redirect(next, 303);
    return c.html(
      page({ title: 'Sign in', section: 'login', body: loginBody(next, null), scripts: ['login.js'] }),
    );
  });

  app.post('/login', async (c) => {
    if (!sameOrigin(c, ctx.publicOrigin))
      return errorPage(c, 403, 'This sign-in did not come from this site.');
    const address = clientAddress(c, ctx.auth.trustedProxies);
    const form = await c.req.parseBody();
    const next = safeNext(form.next);
    // As for bearer tokens: a correct token signs in, however often this address failed.
    const identity = ctx.auth.approvers.authenticate(formText(form.token));
    if (!identity) {
      const wait = ctx.auth.limiter.blockedFor(address);
      if (wait > 0) {
        c.header('retry-after', String(wait));
        const body = loginBody(next, `Too many failed attempts. Try again in ${wait} seconds.`);
        return c.html(page({ title: 'Sign in', section: 'login', body }), 429);
      }
      ctx.auth.limiter.fail(address);
      const body = loginBody(next, 'That token is not valid.');
      return c.html(page({ title: 'Sign in', section: 'login', body }), 401);
    }
    ctx.auth.limiter.reset(address);
    // A new random session id on every sign-in: nothing set before it can be reused.
    const session = await ctx.auth.webSessions.create(identity);
    setCookie(c, SESSION_COOKIE, session.id, {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      secure: ctx.secureCookies,
      maxAge: Math.floor(WEB_SESSION_TTL_MS / 1000),
    });
    return c.redirect(next, 303);
  });

  app.post('/logout', async (c) => {
    const caller = callerOf(c);
    if (!caller?.webSession) return c.redirect('/login', 303);
    const form = await c.req.parseBody();
    // Signing someone out is a change like any other: a page on another site must not be
    // able to do it, so the cookie stays unless the form came from our own page.
    if (!sameOrigin(c, ctx.publicOrigin) || !csrfMatches(caller.csrf, form.csrf))
      return errorPage(c, 403, 'This sign-out did not come from this inbox. Use the Sign out button.');
    await ctx.auth.webSessions.destroy(caller.webSession.id);
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.redirect('/login', 303);
  });
}
