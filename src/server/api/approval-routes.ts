import type { Hono } from 'hono';
import { z } from 'zod';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import { enrichTurn, getApproval, queryApprovals } from '../approval-views.ts';
import { decideToolCall } from '../decide-request.ts';
import { queryText, readJson } from '../http/read-json.ts';
import { requireIdentity, type ServerContext, type ServerEnv } from '../server-context.ts';
import { approvalStatus, decisionBody } from './schemas.ts';

export function parseLimit(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const limit = Number(text);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new InvalidInputError('limit must be a whole number from 1 to 1000.');
  return limit;
}

export function approvalRoutes(app: Hono<ServerEnv>, ctx: ServerContext): void {
  app.get('/v1/approvals', async (c) => {
    requireIdentity(c);
    const status = queryText(c, 'status');
    const parsed = status === undefined ? undefined : approvalStatus.safeParse(status);
    if (parsed && !parsed.success)
      throw new InvalidInputError(`status must be pending, approved, rejected or expired, not ${status}.`);
    const session = queryText(c, 'session');
    const tool = queryText(c, 'tool');
    const list = await queryApprovals(
      ctx.requestBook,
      ctx,
      {
        ...(parsed ? { status: parsed.data } : {}),
        ...(session ? { session } : {}),
        ...(tool ? { tool } : {}),
        limit: parseLimit(queryText(c, 'limit'), 200),
      },
      ctx.now(),
    );
    return c.json(list);
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
