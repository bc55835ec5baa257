import type { Hono } from 'hono';
import { auditTrail, listExecutions, revokeRule, verifyAudit } from '../../agent/queries.ts';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import { NotFoundError } from '../../core/errors/not-found-error.ts';
import { decodeExecutionCursor, encodeExecutionCursor } from '../../store/execution-page.ts';
import { enrichTurn } from '../approval-views.ts';
import { queryText, queryWholeNumber, readJson } from '../http/read-json.ts';
import { requireIdentity, type ServerContext, type ServerEnv } from '../server-context.ts';
import { DEFAULT_PAGE_SIZE, parseLimit, setPageHeaders } from './list-query.ts';
import { executionStatus, reconcileBody } from './schemas.ts';

/** Executions, reconciliation, the audit trail and standing rules. */
export function ledgerRoutes(app: Hono<ServerEnv>, ctx: ServerContext): void {
  app.get('/v1/executions', async (c) => {
    requireIdentity(c);
    const status = queryText(c, 'status');
    const parsed = status === undefined ? undefined : executionStatus.safeParse(status);
    if (parsed && !parsed.success)
      throw new InvalidInputError(`status must be started, succeeded, failed or unknown, not ${status}.`);
    const session = queryText(c, 'session');
    const after = queryText(c, 'after');
    const limit = parseLimit(queryText(c, 'limit'), DEFAULT_PAGE_SIZE);
    // The filters the cursor is bound to: one handed out under others is INVALID_CURSOR.
    const filter = {
      ...(session ? { session } : {}),
      ...(parsed ? { status: parsed.data } : {}),
    };
    // One more than the page says whether there is a next one.
    const rows = await listExecutions(ctx.store, {
      ...filter,
      ...(after ? { after: decodeExecutionCursor(after, filter) } : {}),
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    setPageHeaders(c, { next: rows.length > limit && last ? encodeExecutionCursor(last, filter) : null });
    return c.json(page);
  });

  app.post('/v1/executions/:requestId/reconcile', async (c) => {
    const identity = requireIdentity(c);
    const body = await readJson(c, reconcileBody);
    const requestId = c.req.param('requestId');
    const execution = await ctx.store.getExecution(requestId);
    if (!execution) throw new NotFoundError(`No execution for request ${requestId}.`);
    const session = await ctx.store.getSession(execution.session);
    const agentName = session?.agent ?? ctx.agents.default.name;
    // Settling an outcome is a decision about the call: the agent checks the same rights.
    const turn = await ctx.agents.get(agentName).reconcile(requestId, {
      outcome: body.outcome,
      by: identity.name,
      roles: identity.roles,
      ...(body.result !== undefined ? { result: body.result } : {}),
    });
    return c.json(enrichTurn(ctx, turn));
  });

  app.get('/v1/audit', async (c) => {
    requireIdentity(c);
    const session = queryText(c, 'session');
    const afterSeq = queryWholeNumber(c, 'afterSeq');
    const limit = queryWholeNumber(c, 'limit');
    const entries = await auditTrail(ctx.store, {
      ...(session ? { session } : {}),
      ...(afterSeq !== undefined ? { afterSeq } : {}),
      ...(limit !== undefined ? { limit } : {}),
    });
    // A full page may have more after it: the next page starts after its last seq.
    const last = entries[entries.length - 1];
    if (limit !== undefined && last !== undefined && entries.length === limit) {
      const url = new URL(c.req.url);
      url.searchParams.set('afterSeq', String(last.seq));
      c.header('Link', `<${url.pathname}${url.search}>; rel="next"`);
    }
    return c.json(entries);
  });

  app.get('/v1/audit/verify', async (c) => {
    requireIdentity(c);
    return c.json(await verifyAudit(ctx.store));
  });

  app.get('/v1/rules', async (c) => {
    requireIdentity(c);
    const session = queryText(c, 'session');
    return c.json(
      await ctx.store.listRules({
        ...(session ? { session } : {}),
        includeRevoked: queryText(c, 'includeRevoked') === 'true',
      }),
    );
  });

  app.post('/v1/rules/:id/revoke', async (c) => {
    const identity = requireIdentity(c);
    return c.json(await revokeRule(ctx.store, c.req.param('id'), identity.name, ctx.now()));
  });
}
