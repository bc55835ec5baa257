import type { Hono } from 'hono';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import type { JsonValue } from '../../core/json.ts';
import { parseJsonText } from '../../core/parse-json.ts';
import { csrfMatches, sameOrigin } from '../auth/caller.ts';
import type { ServerContext, ServerEnv } from '../server-context.ts';
import type { WorkflowDesk } from '../workflows/workflow-desk.ts';
import { errorPage } from './error-page.ts';
import { formText, viewerOr, withFlash } from './web-guard.ts';

/** The inbox's answer form for a workflow request: plain POST, then back to the list. */
export function workflowWebRoutes(app: Hono<ServerEnv>, ctx: ServerContext, desk: WorkflowDesk): void {
  app.post('/runs/:run/requests/:requestId/respond', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const form = await c.req.parseBody();
    if (!sameOrigin(c, ctx.publicOrigin) || !csrfMatches(viewer.csrf, form.csrf)) {
      return errorPage(
        c,
        403,
        'This form did not come from this inbox (or it is too old). Reload the page and try again.',
      );
    }
    const flash = (kind: 'ok' | 'error', text: string) =>
      c.redirect(withFlash('/', ctx.flashes.put(viewer.identity.name, { kind, text })), 303);
    let response: JsonValue;
    if (form.approved === 'true' || form.approved === 'false') {
      const fields: Record<string, JsonValue> = { approved: form.approved === 'true' };
      for (const [key, value] of Object.entries(form)) {
        if (key.startsWith('field:')) fields[key.slice('field:'.length)] = formText(value);
      }
      response = fields;
    } else {
      try {
        response = parseJsonText(formText(form.json), 'The answer');
      } catch (error) {
        return flash('error', (error as Error).message);
      }
    }
    try {
      const view = await desk.respond(
        viewer.identity,
        c.req.param('run'),
        c.req.param('requestId'),
        response,
      );
      const output = view.outputs.at(-1);
      return flash(
        'ok',
        `Answered. Run ${view.run} is ${view.status}.${output === undefined ? '' : ` Output: ${typeof output === 'string' ? output : JSON.stringify(output)}`}`,
      );
    } catch (error) {
      if (!CountersignError.is(error)) throw error;
      return flash(
        'error',
        error.code === 'ALREADY_DECIDED' ? error.message : `${error.code}: ${error.message}`,
      );
    }
  });
}
