import type { Context, Hono } from 'hono';
import { auditTrail, verifyAudit } from '../../agent/queries.ts';
import type { ApprovalRequest } from '../../core/approval.ts';
import { applyEdit, diffArgs } from '../../core/edit-call.ts';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { InvalidInputError } from '../../core/errors/invalid-input-error.ts';
import type { RequestDecision } from '../../requests/request-desk.ts';
import { requestStats } from '../../requests/request-stats.ts';
import { getApproval, type HttpApprovalView } from '../approval-views.ts';
import { csrfMatches, sameOrigin } from '../auth/caller.ts';
import type { ServerContext, ServerEnv } from '../server-context.ts';
import type { Viewer } from './approval-card.ts';
import { decisionFromForm, outcomeText } from './decision-form.ts';
import { editFromForm, editPreview } from './edit-form.ts';
import { errorPage } from './error-page.ts';
import { html, type SafeHtml } from './html.ts';
import { pageOfRows } from './inbox-listing.ts';
import { auditBody, detailBody, HISTORY_SORTS, HISTORY_STATUSES, historyBody } from './inbox-pages.ts';
import { page } from './layout.ts';
import { PENDING_SORTS, pendingListBody, totalText } from './list-page.ts';
import { listHref, readListQuery } from './list-query.ts';
import { localTime, timeZoneOf } from './local-time.ts';
import { type Reader, recordedButStuckText, refusalText } from './people-messages.ts';
import { type PaneData, requestPane } from './request-pane.ts';
import { type RowState, requestRow, rowState } from './request-row.ts';
import { STATS_WINDOWS, statsBody } from './stats-page.ts';
import { viewerOr, withFlash } from './web-guard.ts';

const AUDIT_PAGE = 500;

/** What a decision did, for a page (a flash after the redirect) or the script (JSON). */
export interface DecisionReply {
  ok: boolean;
  text: string;
  /** The approval was recorded and the request still waits for others (it stays in the list). */
  waiting?: boolean;
}

export function inboxRoutes(app: Hono<ServerEnv>, ctx: ServerContext): void {
  const flashFor = (name: string, id: string | undefined) => ctx.flashes.take(id, name);
  const readerOf = (c: Context<ServerEnv>, viewer: Viewer): Reader => ({
    name: viewer.identity.name,
    timeZone: timeZoneOf(c),
  });

  /** Who holds it, whether its reminder came due (overdue), whether it was escalated: from the row. */
  const stateOf = (view: HttpApprovalView): RowState => rowState(view, ctx.now().toISOString());

  const paneData = async (view: HttpApprovalView): Promise<PaneData> => ({
    view,
    // A port request's session is its run's audit session: no conversation, no ledger row.
    messages: view.kind === 'port' ? [] : await ctx.store.loadMessages(view.session),
    execution: view.kind === 'port' ? null : await ctx.store.getExecution(view.id),
    state: stateOf(view),
  });

  app.get('/', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    // The log's head before the list is read: the live stream starts there, so a request
    // raised between this read and the stream's connection still arrives.
    const seq = await ctx.store.lastAuditSeq();
    const now = ctx.now();
    const timeZone = timeZoneOf(c);
    const query = readListQuery((name) => c.req.query(name), { statuses: [], sorts: PENDING_SORTS });
    const rows = await pageOfRows(ctx, query, { status: 'pending' }, now);
    // The open request: the one asked for (it may be on no page of this view), else the first.
    const asked = c.req.query('selected');
    const selected = asked ?? rows.views[0]?.id ?? null;
    let pane = null;
    if (selected) {
      const view =
        rows.views.find((v) => v.id === selected) ??
        (await getApproval(ctx.requestBook, ctx, selected, now).catch(() => null));
      if (view)
        pane = requestPane(await paneData(view), viewer, {
          nowMs: now.getTime(),
          timeZone,
          level: 2,
          returnTo: listHref('/', query),
        });
    }
    const states = new Map(rows.views.map((view) => [view.id, stateOf(view)]));
    return c.html(
      page({
        title: rows.total.count ? `(${totalText(rows.total)}) Pending` : 'Pending',
        section: 'inbox',
        identity: viewer.identity,
        csrf: viewer.csrf,
        flash: flashFor(viewer.identity.name, c.req.query('flash')),
        body: pendingListBody({
          rows,
          query,
          viewer,
          nowMs: now.getTime(),
          timeZone,
          selected,
          pane,
          states,
        }),
        scripts: ['inbox.js'],
        data: { page: 'pending', seq: String(seq), ...(selected ? { request: selected } : {}) },
        wide: true,
      }),
    );
  });

  // One row, for the live list to add when a request arrives; 204 once it is not pending.
  app.get('/inbox/rows/:id', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return c.body(null, 401);
    const now = ctx.now();
    const view = await getApproval(ctx.requestBook, ctx, c.req.param('id'), now);
    if (view.status !== 'pending') return c.body(null, 204);
    c.header('cache-control', 'no-store');
    const href = `/?selected=${encodeURIComponent(view.id)}#pane`;
    return c.html(
      requestRow(view, viewer, {
        nowMs: now.getTime(),
        timeZone: timeZoneOf(c),
        selected: false,
        href,
        state: stateOf(view),
      }).value,
    );
  });

  // The pane for one request, for the script to show beside the list without a page load.
  app.get('/inbox/pane/:id', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return c.body(null, 401);
    const now = ctx.now();
    const view = await getApproval(ctx.requestBook, ctx, c.req.param('id'), now);
    c.header('cache-control', 'no-store');
    const returnTo = c.req.query('return');
    return c.html(
      requestPane(await paneData(view), viewer, {
        nowMs: now.getTime(),
        timeZone: timeZoneOf(c),
        level: 2,
        returnTo: returnTo?.startsWith('/?') || returnTo === '/' ? returnTo : '/',
      }).value,
    );
  });

  const detail = async (c: Context<ServerEnv>) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const seq = await ctx.store.lastAuditSeq();
    const now = ctx.now();
    const view = await getApproval(ctx.requestBook, ctx, c.req.param('id') ?? '', now);
    return c.html(
      page({
        title: `${view.tool} for ${view.customer ?? 'no customer'}`,
        section: 'inbox',
        identity: viewer.identity,
        csrf: viewer.csrf,
        flash: flashFor(viewer.identity.name, c.req.query('flash')),
        body: detailBody(await paneData(view), viewer, now.getTime(), timeZoneOf(c)),
        scripts: ['inbox.js'],
        data: { page: 'detail', request: view.id, status: view.status, seq: String(seq) },
      }),
    );
  };
  app.get('/requests/:id', detail);
  // The older address of the same page, kept for links already sent.
  app.get('/approvals/:id', detail);

  /**
   * One decision, through the one decide path (ctx.requests), answered in words for the
   * person: what happened, or why not and what to do.
   */
  const decideOne = async (
    id: string,
    decision: RequestDecision,
    viewer: Viewer,
    reader: Reader,
    run: string | undefined,
  ): Promise<DecisionReply> => {
    try {
      const outcome = await ctx.requests.decide(
        id,
        decision,
        { by: viewer.identity.name, roles: viewer.identity.roles },
        run === undefined ? {} : { run },
      );
      // An approval that left the request waiting (a quorum filling, an edit re-routed): read
      // the row once more to say how far it is. Any other decision needs no read.
      const waiting =
        !('response' in decision) && decision.approved && outcome.turn?.status === 'awaiting_approval'
          ? await outcome.request()
          : null;
      return {
        ok: true,
        text: outcomeText(outcome, decision, waiting),
        ...(waiting?.status === 'pending' ? { waiting: true } : {}),
      };
    } catch (error) {
      if (!CountersignError.is(error)) throw error;
      const now: ApprovalRequest | null = await ctx.requestBook.getApproval(id).catch(() => null);
      // A decision that won but whose continuation failed (the model is down) still stands.
      if (
        error.code !== 'ALREADY_DECIDED' &&
        now?.decision?.by === viewer.identity.name &&
        now.decision.kind === 'person'
      ) {
        return { ok: false, text: recordedButStuckText(now.decision, error) };
      }
      return { ok: false, text: refusalText(error, now ?? { id, expiresAt: '', decision: null }, reader) };
    }
  };

  /** The forms' origin check, and whether the caller is the script (JSON) or a page (redirect). */
  const formGuard = async (c: Context<ServerEnv>, viewer: Viewer) => {
    const form = await c.req.parseBody({ all: true });
    const first = (value: unknown) => (Array.isArray(value) ? value[0] : value);
    if (!sameOrigin(c, ctx.publicOrigin) || !csrfMatches(viewer.csrf, first(form.csrf))) return null;
    return form;
  };
  const wantsJson = (c: Context<ServerEnv>) => (c.req.header('accept') ?? '').includes('application/json');
  const refusedForm = (c: Context<ServerEnv>) =>
    wantsJson(c)
      ? c.json(
          {
            ok: false,
            text: 'This form did not come from this inbox (or it is too old). Reload the page and try again.',
          },
          403,
        )
      : errorPage(
          c,
          403,
          'This form did not come from this inbox (or it is too old). Reload the page and try again.',
        );

  /** Back to where the form was (the request's page, or a view of the list), else the list. */
  const returnOf = (value: unknown, id: string | null): string => {
    const text = typeof value === 'string' ? value : '';
    if (id !== null && (text === `/requests/${id}` || text === `/approvals/${id}`)) return text;
    if (text === '/' || (text.startsWith('/?') && !text.includes('//') && !text.includes('\\'))) return text;
    return '/';
  };

  /**
   * One form handler for both kinds: approve or reject (a tool call, an approval-shaped
   * port), or a port's answer as JSON. The page it returns to shows what happened; the
   * script gets the same words as JSON and moves on to the next request.
   */
  const decide = async (c: Context<ServerEnv>) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const id = c.req.param('requestId') ?? c.req.param('id') ?? '';
    const raw = await formGuard(c, viewer);
    if (!raw) return refusedForm(c);
    const form = Object.fromEntries(
      Object.entries(raw).map(([key, value]) => [key, Array.isArray(value) ? value[0]! : value]),
    );
    const returnTo = returnOf(form.return, id);
    const name = viewer.identity.name;
    const reply = async (result: DecisionReply) => {
      if (wantsJson(c)) return c.json(result, result.ok ? 200 : 409);
      return c.redirect(
        withFlash(returnTo, ctx.flashes.put(name, { kind: result.ok ? 'ok' : 'error', text: result.text })),
        303,
      );
    };
    const parsed = decisionFromForm(form);
    if ('error' in parsed) return reply({ ok: false, text: parsed.error });
    return reply(await decideOne(id, parsed.decision, viewer, readerOf(c, viewer), c.req.param('run')));
  };
  app.post('/requests/:id/decide', decide);

  /** Claim a request for 15 minutes, or give the claim back: through the request desk. */
  app.post('/requests/:id/claim', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const raw = await formGuard(c, viewer);
    if (!raw) return refusedForm(c);
    const first = (value: unknown) => (Array.isArray(value) ? value[0] : value);
    const id = c.req.param('id');
    const returnTo = returnOf(first(raw.return), id);
    const decider = { by: viewer.identity.name, roles: viewer.identity.roles };
    const reader = readerOf(c, viewer);
    let result: DecisionReply;
    try {
      if (first(raw.claim) === 'release') {
        await ctx.requests.release(id, decider);
        result = { ok: true, text: 'Released: others see it is free.' };
      } else {
        const held = await ctx.requests.claim(id, decider);
        result = {
          ok: true,
          text: `Claimed until ${held.claim ? localTime(held.claim.until, reader.timeZone) : 'later'}: others see you are on it.`,
        };
      }
    } catch (error) {
      if (!CountersignError.is(error)) throw error;
      const now = await ctx.requestBook.getApproval(id).catch(() => null);
      result = { ok: false, text: refusalText(error, now ?? { id, expiresAt: '', decision: null }, reader) };
    }
    if (wantsJson(c)) return c.json(result, result.ok ? 200 : 409);
    return c.redirect(
      withFlash(
        returnTo,
        ctx.flashes.put(viewer.identity.name, { kind: result.ok ? 'ok' : 'error', text: result.text }),
      ),
      303,
    );
  });

  /**
   * The first step of "edit, then approve": the changed fields read and checked against the
   * request's editable ones (applyEdit, the same rule the agent applies), then the change
   * shown, field by field, with the button that approves it. Nothing is recorded here.
   * `?fragment=1` answers the preview alone, for the script to show in the pane.
   */
  app.post('/requests/:id/edit', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const raw = await formGuard(c, viewer);
    if (!raw) return refusedForm(c);
    const form = Object.fromEntries(
      Object.entries(raw).map(([key, value]) => [key, Array.isArray(value) ? value[0]! : value]),
    );
    const now = ctx.now();
    const view = await getApproval(ctx.requestBook, ctx, c.req.param('id'), now);
    const returnTo = returnOf(form.return, view.id);
    const fragment = c.req.query('fragment') === '1';
    const read = editFromForm(view, form);
    let body: SafeHtml;
    let status: 200 | 400 = 200;
    try {
      if ('error' in read) throw new InvalidInputError(read.error);
      // The same two steps the agent takes: merge the patch (editable fields only), then diff.
      const diff = diffArgs(view.args, applyEdit(view, read.edit));
      if (diff.length === 0)
        throw new InvalidInputError('Nothing was changed. Change a value, or approve the call as proposed.');
      body = editPreview(view, viewer, read.edit, diff, returnTo);
    } catch (error) {
      if (!CountersignError.is(error)) throw error;
      status = 400;
      body = html`<p class="flash error" role="alert">${refusalText(error, view, readerOf(c, viewer))}</p>`;
    }
    if (fragment) return c.html(body.value, status);
    const data = await paneData(view);
    return c.html(
      page({
        title: `Edit ${view.tool} for ${view.customer ?? 'no customer'}`,
        section: 'inbox',
        identity: viewer.identity,
        csrf: viewer.csrf,
        body: html`<p><a href="${returnTo}">← Back</a></p>${body}${requestPane(data, viewer, {
          nowMs: now.getTime(),
          timeZone: timeZoneOf(c),
          level: 1,
          returnTo,
        })}`,
        scripts: ['inbox.js'],
        data: { page: 'edit', request: view.id },
      }),
      status,
    );
  });
  // Older form addresses (a page loaded before an upgrade still posts to them).
  app.post('/approvals/:id/decide', decide);
  app.post('/runs/:run/requests/:requestId/respond', decide);

  /**
   * Several requests, one verdict and one reason: each is decided on its own through the one
   * decide path (its own compare-and-set, audit entry and continuation), one after another,
   * and the reply says how each went. A refusal of one does not stop the others.
   */
  app.post('/requests/bulk', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const form = await formGuard(c, viewer);
    if (!form) return refusedForm(c);
    const first = (value: unknown) => (Array.isArray(value) ? value[0] : value);
    const ids = [
      ...new Set(
        (Array.isArray(form.id) ? form.id : form.id === undefined ? [] : [form.id]).filter(
          (value): value is string => typeof value === 'string' && value !== '',
        ),
      ),
    ];
    const returnTo = returnOf(first(form.return), null);
    const name = viewer.identity.name;
    const reply = (ok: boolean, text: string, results: Array<{ id: string } & DecisionReply> = []) =>
      wantsJson(c)
        ? c.json({ ok, text, results }, ok ? 200 : 409)
        : c.redirect(withFlash(returnTo, ctx.flashes.put(name, { kind: ok ? 'ok' : 'error', text })), 303);
    if (ids.length === 0)
      return reply(false, 'Select at least one request first (the box at the start of its row).');
    if (ids.length > 100) return reply(false, `That is ${ids.length} requests; decide at most 100 at once.`);
    const parsed = decisionFromForm({ verdict: first(form.verdict) ?? '', reason: first(form.reason) ?? '' });
    if ('error' in parsed) return reply(false, parsed.error);
    const reader = readerOf(c, viewer);
    const results: Array<{ id: string } & DecisionReply> = [];
    for (const id of ids)
      results.push({ id, ...(await decideOne(id, parsed.decision, viewer, reader, undefined)) });
    const done = results.filter((r) => r.ok).length;
    const verb = 'response' in parsed.decision || parsed.decision.approved ? 'Approved' : 'Rejected';
    const failed = results.filter((r) => !r.ok);
    const text =
      `${verb} ${done} of ${results.length}.` +
      (failed.length ? ` Not decided: ${failed.map((r) => `${r.id}: ${r.text}`).join(' ')}` : '');
    return reply(failed.length === 0, text, results);
  });

  app.get('/history', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const timeZone = timeZoneOf(c);
    const query = readListQuery((name) => c.req.query(name), {
      statuses: HISTORY_STATUSES,
      sorts: HISTORY_SORTS,
    });
    const rows = await pageOfRows(ctx, query, {}, ctx.now());
    return c.html(
      page({
        title: 'History',
        section: 'history',
        identity: viewer.identity,
        csrf: viewer.csrf,
        body: historyBody(rows, query, timeZone),
        scripts: ['inbox.js'],
        wide: true,
      }),
    );
  });

  // The team's numbers: the same function and store query `/v1/stats` answers with.
  app.get('/stats', async (c) => {
    const viewer = viewerOr(c);
    if (viewer instanceof Response) return viewer;
    const asked = Number(c.req.query('days'));
    const days = (STATS_WINDOWS as readonly number[]).includes(asked) ? asked : STATS_WINDOWS[0];
    const stats = await requestStats(ctx.requestBook, { since: `${days}d` }, ctx.now());
    return c.html(
      page({
        title: 'Numbers',
        section: 'stats',
        identity: viewer.identity,
        csrf: viewer.csrf,
        body: statsBody(stats, days, timeZoneOf(c)),
        scripts: ['inbox.js'],
        wide: true,
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
        body: auditBody(entries.slice(-AUDIT_PAGE).reverse(), entries.length, verdict, timeZoneOf(c)),
        scripts: ['inbox.js'],
      }),
    );
  });
}
