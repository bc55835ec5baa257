import type { Hono } from 'hono';
import { SERVICE_ROLE } from '../../core/decision-rights.ts';
import { ForbiddenError } from '../../core/errors/forbidden-error.ts';
import { NotFoundError } from '../../core/errors/not-found-error.ts';
import { enrichTurn, queryApprovals } from '../approval-views.ts';
import { hasRole } from '../auth/identity.ts';
import { readJson } from '../http/read-json.ts';
import { requireIdentity, type ServerContext, type ServerEnv } from '../server-context.ts';
import type { SessionView } from './response-schemas.ts';
import { messageBody } from './schemas.ts';

/**
 * Posting a message acts for the customer named in it, so it takes the `service` role (your
 * backend, which signed the customer in). The poster is recorded as the raiser of what the
 * model asks for, and may not decide it (src/core/decision-rights.ts).
 */
export { SERVICE_ROLE };

export function sessionRoutes(app: Hono<ServerEnv>, ctx: ServerContext): void {
  app.post('/v1/sessions/:session/messages', async (c) => {
    const identity = requireIdentity(c);
    if (!hasRole(identity, SERVICE_ROLE))
      throw new ForbiddenError(`Posting a message for a customer needs the ${SERVICE_ROLE} role.`);
    const body = await readJson(c, messageBody);
    const sessionId = c.req.param('session');
    const existing = await ctx.store.getSession(sessionId);
    const agent = ctx.agents.get(body.agent ?? existing?.agent ?? ctx.agents.default.name);
    const result = await agent.chat(sessionId, body.text, {
      ...(body.user === undefined ? {} : { principal: body.user }),
      by: identity.name,
    });
    return c.json(enrichTurn(ctx, result));
  });

  app.get('/v1/sessions/:session', async (c) => {
    requireIdentity(c);
    const sessionId = c.req.param('session');
    const session = await ctx.store.getSession(sessionId);
    if (!session) throw new NotFoundError(`Session ${sessionId} does not exist.`);
    const messages = await ctx.store.loadMessages(sessionId);
    const pending = await queryApprovals(
      ctx.requestBook,
      ctx,
      { status: 'pending', session: sessionId },
      ctx.now(),
    );
    const view: SessionView = {
      id: session.id,
      agent: session.agent,
      customer: session.principal,
      createdAt: session.createdAt,
      updatedAt: session.updatedAt,
      messages,
      pending,
    };
    return c.json(view);
  });

  app.post('/v1/sessions/:session/resume', async (c) => {
    requireIdentity(c);
    const sessionId = c.req.param('session');
    const session = await ctx.store.getSession(sessionId);
    if (!session) throw new NotFoundError(`Session ${sessionId} does not exist.`);
    return c.json(enrichTurn(ctx, await ctx.agents.get(session.agent).resume(sessionId)));
  });
}
