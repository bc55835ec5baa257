import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { toApprovalView } from '../../agent/views.ts';
import type { ApprovalRequest } from '../../core/approval.ts';
import { parseDuration } from '../../core/duration.ts';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import { storeNow } from '../../liveness/store-clock.ts';
import { toHttpView } from '../approval-views.ts';
import { readBodyText } from '../http/read-body-text.ts';
import { readJson } from '../http/read-json.ts';
import { requireIdentity, type ServerContext, type ServerEnv } from '../server-context.ts';

/** How long to hold it: `30m`, `1h` or milliseconds (default 15 minutes, at most 8 hours). */
export const claimBody = z.strictObject({
  for: z
    .union([z.string(), z.number()])
    .optional()
    .describe('How long to hold it: 30m, 1h or milliseconds; default 15m, at most 8h, never past its expiry'),
});

/**
 * The claim's optional body. No body claims for 15 minutes; a body sent without a content
 * type is refused rather than dropped, so a term someone asked for is never silently replaced.
 */
async function claimBodyOf(c: Context<ServerEnv>): Promise<z.output<typeof claimBody>> {
  if (c.req.header('content-length') === '0') return {};
  if (c.req.header('content-type')) return readJson(c, claimBody);
  if ((await readBodyText(c)).trim() === '') return {};
  throw new InvalidInputError('The request body must be JSON.', {
    hint: 'Send it with Content-Type: application/json, or send no body to claim for 15 minutes. Nothing was claimed.',
  });
}

/**
 * Claims: an approver takes a waiting request to work on it, so others see who holds it and
 * until when; a claim lapses by itself and never stops anyone deciding (the request desk and
 * src/requests/claims.ts hold the rules). The body is optional: no body claims for 15 minutes.
 */
export function claimRoutes(app: Hono<ServerEnv>, ctx: ServerContext): void {
  // The claim in the answer is judged on the clock it was taken on (storeNow), not this
  // host's: on a host whose clock runs ahead, a claim just won would read as lapsed.
  const claimView = async (request: ApprovalRequest) =>
    toHttpView(
      toApprovalView(request, new Date(await storeNow(ctx.store, () => ctx.now().getTime())).toISOString()),
      ctx,
    );

  app.post('/v1/requests/:id/claim', async (c) => {
    const identity = requireIdentity(c);
    const body = await claimBodyOf(c);
    const forMs = body.for === undefined ? undefined : parseDuration(body.for, 'for');
    const request = await ctx.requests.claim(
      c.req.param('id'),
      { by: identity.name, roles: identity.roles },
      forMs === undefined ? {} : { forMs },
    );
    return c.json(await claimView(request));
  });

  app.post('/v1/requests/:id/release', async (c) => {
    const identity = requireIdentity(c);
    const request = await ctx.requests.release(c.req.param('id'), {
      by: identity.name,
      roles: identity.roles,
    });
    return c.json(await claimView(request));
  });
}
