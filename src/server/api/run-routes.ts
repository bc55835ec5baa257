import type { Hono } from 'hono';
import { z } from 'zod';
import { ForbiddenError } from '../../core/errors/forbidden-error.ts';
import { userIdPattern } from '../../core/ids.ts';
import { jsonValue } from '../../core/json-schema.ts';
import { hasRole } from '../auth/identity.ts';
import { readJson } from '../http/read-json.ts';
import { requireIdentity, type ServerContext, type ServerEnv } from '../server-context.ts';
import type { WorkflowDesk } from '../workflows/workflow-desk.ts';
import { setPageHeaders } from './list-query.ts';
import { readRunListQuery } from './run-list-query.ts';
import { SERVICE_ROLE } from './session-routes.ts';

export const startRunBody = z.strictObject({
  workflow: z.string().min(1).describe('The workflow to run, e.g. refund'),
  run: z.string().min(1).describe('The run id you choose, e.g. refund-1040'),
  input: jsonValue.describe("The run's input, e.g. 1040"),
  user: z
    .string()
    .regex(userIdPattern)
    .optional()
    .describe('The customer the run acts for; they may not answer its requests'),
});

export const respondBody = z.strictObject({
  response: jsonValue.describe(
    'The answer, in the port\'s response schema, e.g. {"approved": true, "note": "…"}',
  ),
});

export const resumeBody = z.strictObject({
  from: z.string().optional().describe('Continue from this checkpoint (a new branch) instead of the latest'),
});

/** Workflow runs: start, read, answer a waiting request, resume, history. */
export function runRoutes(
  app: Hono<ServerEnv>,
  desk: WorkflowDesk,
  ctx: Pick<ServerContext, 'requests'>,
): void {
  app.get('/v1/runs', async (c) => {
    requireIdentity(c);
    // One keyset page, as /v1/requests: the cursor in Link and X-Next-Cursor, the body the array.
    const page = await desk.runner.pageRuns(readRunListQuery(c));
    setPageHeaders(c, page);
    return c.json(page.items);
  });

  app.post('/v1/runs', async (c) => {
    const identity = requireIdentity(c);
    // Starting a run asks for something on someone's behalf, like a customer's message.
    if (!hasRole(identity, SERVICE_ROLE))
      throw new ForbiddenError(`Starting a workflow run needs the ${SERVICE_ROLE} role.`);
    const body = await readJson(c, startRunBody);
    return c.json(
      await desk.runner.start(body.workflow, body.run, body.input, {
        by: identity.name,
        ...(body.user === undefined ? {} : { customer: body.user }),
      }),
    );
  });

  app.get('/v1/runs/:run', async (c) => {
    requireIdentity(c);
    return c.json(await desk.view(c.req.param('run')));
  });

  app.get('/v1/runs/:run/history', async (c) => {
    requireIdentity(c);
    return c.json(await desk.runner.history(c.req.param('run')));
  });

  app.post('/v1/runs/:run/resume', async (c) => {
    requireIdentity(c);
    const body = await readJson(c, resumeBody);
    return c.json(await desk.runner.resume(c.req.param('run'), body.from ? { from: body.from } : {}));
  });

  app.post('/v1/runs/:run/requests/:requestId/response', async (c) => {
    const identity = requireIdentity(c);
    const body = await readJson(c, respondBody);
    const run = c.req.param('run');
    const requestId = c.req.param('requestId');
    // The older address of POST /v1/requests/{id}/decision: the request must be this run's.
    const outcome = await ctx.requests.decide(
      requestId,
      { response: body.response },
      { by: identity.name, roles: identity.roles },
      { run },
    );
    return c.json(outcome.run ?? (await desk.view(run)));
  });
}
