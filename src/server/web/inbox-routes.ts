import type { Context, Hono } from 'hono';
import { auditTrail, verifyAudit } from '../../agent/queries.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { getApproval, queryApprovals } from '../approval-views.ts';
import { csrfMatches, sameOrigin } from '../auth/caller.ts';
import { queryText } from '../http/read-json.ts';
import type { ServerContext, ServerEnv } from '../server-context.ts';
import { approvalCard } from './approval-card.ts';
import { decisionFromForm, outcomeText } from './decision-form.ts';
import { errorPage } from './error-page.ts';
import { auditBody, detailBody, historyBody, pendingBody } from './inbox-pages.ts';
import { page } from './layout.ts';
import { viewerOr, withFlash } from './web-guard.ts';

const AUDIT_PAGE = 500;

export function inboxRoutes(app: Hono<ServerEnv>, ctx: ServerContext): void {
  const flashFor = (name: string, id: string | undefined) => ctx.flashes.take(id, name);

  app.get('/', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const now = ctx.now();
    const list = await queryApprovals(ctx.requestBook, ctx, { status: 'pending' }, now);
    return c.html(
      page({
        title: list.length ? `(${list.length}) Pending` : 'Pending',
        section: 'inbox',
        identity: viewer.identity,
        csrf: viewer.csrf,
        flash: flashFor(viewer.identity.name, c.req.query('flash')),
        body: pendingBody(list, viewer, now.getTime()),
        scripts: ['inbox.js'],
        data: { page: 'pending' },
      }),
    );
  });

  // One card, for the live list to insert when a request arrives; 204 once it is not pending.
  app.get('/inbox/cards/:id', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return c.body(null, 401);
    const now = ctx.now();
    const view = await getApproval(ctx.requestBook, ctx, c.req.param('id'), now);
    if (view.status !== 'pending') return c.body(null, 204);
    c.header('cache-control', 'no-store');
    return c.html(approvalCard(view, viewer, now.getTime()).value);
  });

  const detail = async (c: Context<ServerEnv>) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const now = ctx.now();
    const view = await getApproval(ctx.requestBook, ctx, c.req.param('id') ?? '', now);
    // A port request's session is its run's audit session: no conversation, no ledger row.
    const messages = view.kind === 'port' ? [] : await ctx.store.loadMessages(view.session);
    const execution = view.kind === 'port' ? null : await ctx.store.getExecution(view.id);
    return c.html(
      page({
        title: `${view.tool} for ${view.customer ?? 'no customer'}`,
        section: 'inbox',
        identity: viewer.identity,
        csrf: viewer.csrf,
        flash: flashFor(viewer.identity.name, c.req.query('flash')),
        body: detailBody(view, viewer, messages, execution, now.getTime()),
        scripts: ['inbox.js'],
        data: { page: 'detail', request: view.id, status: view.status },
      }),
    );
  };
  app.get('/requests/:id', detail);
  // The older address of the same page, kept for links already sent.
  app.get('/approvals/:id', detail);

  /**
   * One form handler for both kinds: approve or reject (a tool call, an approval-shaped
   * port), or a port's answer as JSON. It goes the one way every decision goes
   * (ctx.requests); the page it returns to shows what happened.
   */
  const decide = async (c: Context<ServerEnv>) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const id = c.req.param('requestId') ?? c.req.param('id') ?? '';
    const form = await c.req.parseBody();
    if (!sameOrigin(c, ctx.publicOrigin) || !csrfMatches(viewer.csrf, form.csrf)) {
      return errorPage(
        c,
        403,
        'This form did not come from this inbox (or it is too old). Reload the page and try again.',
      );
    }
    // Back to the request's page (at whichever of its two addresses it was), else the list.
    const returnTo =
      form.return === `/requests/${id}` || form.return === `/approvals/${id}` ? form.return : '/';
    const name = viewer.identity.name;
    const flash = (kind: 'ok' | 'error', text: string) =>
      c.redirect(withFlash(returnTo, ctx.flashes.put(name, { kind, text })), 303);
    const parsed = decisionFromForm(form);
    if ('error' in parsed) return flash('error', parsed.error);
    try {
      // The older address names the run: the request must be that run's.
      const run = c.req.param('run');
      const outcome = await ctx.requests.decide(
        id,
        parsed.decision,
        { by: name, roles: viewer.identity.roles },
        run === undefined ? {} : { run },
      );
      return flash('ok', outcomeText(outcome, parsed.decision));
    } catch (error) {
      if (!CountersignError.is(error)) throw error;
      // A decision that won but whose continuation failed (the model is down) still stands.
      const now = await ctx.requestBook.getApproval(id);
      if (error.code !== 'ALREADY_DECIDED' && now?.decision?.by === name && now.decision.kind === 'person') {
        return flash(
          'error',
          `Your decision (${now.decision.verdict}) is recorded, but the work could not continue: ${error.message}`,
        );
      }
      return flash(
        'error',
        error.code === 'ALREADY_DECIDED' ? error.message : `${error.code}: ${error.message}`,
      );
    }
  };
  app.post('/requests/:id/decide', decide);
  // Older form addresses (a page loaded before an upgrade still posts to them).
  app.post('/approvals/:id/decide', decide);
  app.post('/runs/:run/requests/:requestId/respond', decide);

  app.get('/history', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const tool = queryText(c, 'tool');
    const session = queryText(c, 'session');
    const decided = await queryApprovals(
      ctx.requestBook,
      ctx,
      { ...(tool ? { tool } : {}), ...(session ? { session } : {}), decided: true, limit: 200 },
      ctx.now(),
    );
    return c.html(
      page({
        title: 'History',
        section: 'history',
        identity: viewer.identity,
        csrf: viewer.csrf,
        body: historyBody(decided, { ...(tool ? { tool } : {}), ...(session ? { session } : {}) }),
        scripts: ['inbox.js'],
      }),
    );
  });

  app.get('/audit', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const entries = await auditTrail(ctx.store);
    const verdict = c.req.query('verify') ? await verifyAudit(ctx.store) : null;
    return c.html(
      page({
        title: 'Audit',
        section: 'audit',
        identity: viewer.identity,
        csrf: viewer.csrf,
        body: auditBody(entries.slice(-AUDIT_PAGE).reverse(), entries.length, verdict),
        scripts: ['inbox.js'],
      }),
    );
  });
}
