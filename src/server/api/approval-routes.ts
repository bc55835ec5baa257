import type { Hono } from 'hono';
import { z } from 'zod';
import { enrichTurn, getApproval, pageApprovals } from '../approval-views.ts';
import { decideToolCall } from '../decide-request.ts';
import { readJson } from '../http/read-json.ts';
import { requireIdentity, type ServerContext, type ServerEnv } from '../server-context.ts';
import { readListQuery, setPageHeaders } from './list-query.ts';
import { decisionBody } from './schemas.ts';

export function approvalRoutes(app: Hono<ServerEnv>, ctx: ServerContext): void {
  app.get('/v1/approvals', async (c) => {
    requireIdentity(c);
    // The deprecated alias lists tool calls, as it always did; paged like /v1/requests.
    const page = await pageApprovals(
      ctx.requestBook,
      ctx,
      { ...readListQuery(c), kind: 'tool-call' },
      ctx.now(),
    );
    setPageHeaders(c, page);
    return c.json(page.items);
  });

  app.get('/v1/approvals/:id', async (c) => {
    requireIdentity(c);
    return c.json(await getApproval(ctx.requestBook, ctx, c.req.param('id'), ctx.now()));
  });

  app.post('/v1/approvals/:id/decision', async (c) => {
    const identity = requireIdentity(c);
    const { approved, reason, remember, edit, ...extra } = await readJson(c, decisionBody);
    const result = await decideToolCall(ctx, identity, c.req.param('id'), {
      approved,
      reason,
      remember,
      edit,
      extra,
    });
    return c.json(enrichTurn(ctx, result));
  });
}

/** The decision body as documented (without the tolerated extras). */
export const documentedDecision = z.object(decisionBody.shape);
