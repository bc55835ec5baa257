import type { Hono } from 'hono';
import { z } from 'zod';
import { toApprovalView } from '../../agent/views.ts';
import type { RequestDecision } from '../../requests/request-desk.ts';
import { requestStats } from '../../requests/request-stats.ts';
import { enrichTurn, getApproval, pageApprovals, toHttpView } from '../approval-views.ts';
import { verdictOf } from '../decide-request.ts';
import { queryText, readJson } from '../http/read-json.ts';
import { requireIdentity, type ServerContext, type ServerEnv } from '../server-context.ts';
import { readListQuery, setPageHeaders } from './list-query.ts';
import { answerBody, decisionBody } from './schemas.ts';

/** Either a verdict (tool calls, approval-shaped ports) or an answer (ports). */
export const requestDecisionBody = z.union([answerBody, decisionBody]);

/** The decision body as documented (without the tolerated extras). */
export const documentedRequestDecision = z.union([answerBody, z.object(decisionBody.shape)]);

/**
 * The one request resource: tool calls and workflow port requests, listed, read and decided
 * alike. The decision goes through the server's RequestDesk, which hands it to the rules of
 * the request's kind and continues the run it belongs to.
 */
export function requestRoutes(app: Hono<ServerEnv>, ctx: ServerContext): void {
  app.get('/v1/requests', async (c) => {
    requireIdentity(c);
    const page = await pageApprovals(ctx.requestBook, ctx, readListQuery(c), ctx.now());
    setPageHeaders(c, page);
    return c.json(page.items);
  });

  app.get('/v1/stats', async (c) => {
    requireIdentity(c);
    const since = queryText(c, 'since');
    const until = queryText(c, 'until');
    return c.json(
      await requestStats(
        ctx.requestBook,
        { ...(since === undefined ? {} : { since }), ...(until === undefined ? {} : { until }) },
        ctx.now(),
      ),
    );
  });

  app.get('/v1/requests/:id', async (c) => {
    requireIdentity(c);
    return c.json(await getApproval(ctx.requestBook, ctx, c.req.param('id'), ctx.now()));
  });

  app.post('/v1/requests/:id/decision', async (c) => {
    const identity = requireIdentity(c);
    const body = await readJson(c, requestDecisionBody);
    let decision: RequestDecision;
    const answer = answerBody.safeParse(body);
    if (answer.success) {
      decision = { response: answer.data.response };
    } else {
      const { approved, reason, remember, edit, ...extra } = body as z.infer<typeof decisionBody>;
      decision = verdictOf({ approved, reason, remember, edit, extra });
    }
    const outcome = await ctx.requests.decide(c.req.param('id'), decision, {
      by: identity.name,
      roles: identity.roles,
    });
    return c.json({
      request: toHttpView(toApprovalView(await outcome.request(), ctx.now().toISOString()), ctx),
      turn: outcome.turn ? enrichTurn(ctx, outcome.turn) : null,
      run: outcome.run,
    });
  });
}
