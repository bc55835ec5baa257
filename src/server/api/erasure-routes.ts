import type { Hono } from 'hono';
import { ForbiddenError } from '../../core/errors/forbidden-error.ts';
import { erasePrincipal } from '../../erasure/erase-principal.ts';
import { hasRole } from '../auth/identity.ts';
import { requireIdentity, type ServerContext, type ServerEnv } from '../server-context.ts';

/** Erasing a customer destroys their data: only an `admin` may. */
export const ADMIN_ROLE = 'admin';

/**
 * POST /v1/customers/{principal}/erase: the same erasure as `countersign erase` and the
 * library's `erasePrincipal`, by the authenticated admin (audited as the actor).
 */
export function erasureRoutes(app: Hono<ServerEnv>, ctx: ServerContext): void {
  app.post('/v1/customers/:principal/erase', async (c) => {
    const identity = requireIdentity(c);
    if (!hasRole(identity, ADMIN_ROLE))
      throw new ForbiddenError(`Erasing a customer's data needs the ${ADMIN_ROLE} role.`);
    const principal = c.req.param('principal');
    const report = await erasePrincipal(ctx.store, principal, {
      by: identity.name,
      state: ctx.erasure.customerState?.(principal) ?? [],
      now: ctx.now(),
      ...(ctx.erasure.checkpoints ? { checkpoints: ctx.erasure.checkpoints } : {}),
      ...(ctx.erasure.keys ? { keys: ctx.erasure.keys } : {}),
    });
    return c.json(report);
  });
}
