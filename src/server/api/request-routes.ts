import type { Hono } from 'hono';
import { z } from 'zod';
import { toApprovalView } from '../../agent/views.ts';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import type { RequestDecision } from '../../requests/request-desk.ts';
import { enrichTurn, getApproval, queryApprovals, toHttpView } from '../approval-views.ts';
import { verdictOf } from '../decide-request.ts';
import { queryText, readJson } from '../http/read-json.ts';
import { requireIdentity, type ServerContext, type ServerEnv } from '../server-context.ts';
import { parseLimit } from './approval-routes.ts';
import { answerBody, approvalStatus, decisionBody } from './schemas.ts';

const requestKind = z.enum(['tool-call', 'port']);

/** Either a verdict (tool calls, approval-shaped ports) or an answer (ports). */
export const requestDecisionBody = z.union([answerBody, decisionBody]);

/** The decision body as documented (without the tolerated extras). */
export const documentedRequestDecision = z.union([answerBody, z.object(decisionBody.shape)]);

function statusFilter(text: string | undefined) {
  if (text === undefined) return undefined;
  const parsed = approvalStatus.safeParse(text);
  if (!parsed.success)
    throw new InvalidInputError(
      `status must be pending, approved, rejected, answered or expired, not ${text}.`,
    );
  return parsed.data;
}

function kindFilter(text: string | undefined) {
  if (text === undefined) return undefined;
  const parsed = requestKind.safeParse(text);
  if (!parsed.success) throw new InvalidInputError(`kind must be tool-call or port, not ${text}.`);
  return parsed.data;
}

/**
 * The one request resource: tool calls and workflow port requests, listed, read and decided
 * alike. The decision goes through the server's RequestDesk, which hands it to the rules of
 * the request's kind and continues the run it belongs to.
 */
export function requestRoutes(app: Hono<ServerEnv>, ctx: ServerContext): void {
  app.get('/v1/requests', async (c) => {
    requireIdentity(c);
    const status = statusFilter(queryText(c, 'status'));
    const kind = kindFilter(queryText(c, 'kind'));
    const session = queryText(c, 'session');
    const run = queryText(c, 'run');
    const tool = queryText(c, 'tool');
    return c.json(
      await queryApprovals(
        ctx.requestBook,
        ctx,
        {
          ...(status ? { status } : {}),
          ...(kind ? { kind } : {}),
          ...(session ? { session } : {}),
          ...(run ? { run } : {}),
          ...(tool ? { tool } : {}),
          limit: parseLimit(queryText(c, 'limit'), 200),
        },
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
