import { randomBytes } from 'node:crypto';
import { Hono } from 'hono';
import type { Agent } from '../agent/create-agent.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { retentionCutoffs } from '../core/retention.ts';
import type { DataKeyForgetter, StateKey } from '../erasure/erase-principal.ts';
import type { PurgeReport } from '../erasure/purge.ts';
import type { EventBus } from '../events/event-bus.ts';
import { createMemoryEventBus } from '../events/memory/memory-event-bus.ts';
import type { AnyLanguageModel } from '../model/language-model.ts';
import { isRequestReader, requestBooks } from '../requests/request-books.ts';
import { createRequestDesk } from '../requests/request-desk.ts';
import { type CheckpointStore, isCheckpointStore } from '../store/checkpoint-store.ts';
import { createMemoryOutbox } from '../store/memory/memory-outbox.ts';
import { createMemoryWebSessionStore } from '../store/memory/memory-web-session-store.ts';
import { isOutbox, type Outbox } from '../store/ports/server/outbox.ts';
import { isWebSessionStore, type WebSessionStore } from '../store/ports/server/web-session-store.ts';
import { textSearchNotice } from '../store/ports/text-search-state.ts';
import type { Store } from '../store/store.ts';
import type { Workflow } from '../workflow/define-workflow.ts';
import { createWorkflowRunner } from '../workflow/runner.ts';
import { createAgentRegistry } from './agent-registry.ts';
import { approvalRoutes } from './api/approval-routes.ts';
import { claimRoutes } from './api/claim-routes.ts';
import { erasureRoutes } from './api/erasure-routes.ts';
import { eventRoutes } from './api/event-routes.ts';
import { healthRoutes } from './api/health-routes.ts';
import { ledgerRoutes } from './api/ledger-routes.ts';
import { openApiDocument } from './api/openapi.ts';
import { requestRoutes } from './api/request-routes.ts';
import { runRoutes } from './api/run-routes.ts';
import { sessionRoutes } from './api/session-routes.ts';
import {
  type ApproverDirectory,
  type ApproverEntry,
  createApproverDirectory,
} from './auth/approver-tokens.ts';
import { type AuthConfig, resolveCaller, sameOrigin } from './auth/caller.ts';
import { createChatSignIns } from './auth/chat-sign-ins.ts';
import { createRateLimiter } from './auth/rate-limiter.ts';
import { createWebSessions } from './auth/web-sessions.ts';
import type { StreamRegistry } from './events/event-stream.ts';
import { createLiveFeed, type LiveFeed } from './events/live-feed.ts';
import { onceEach } from './events/once-each.ts';
import { type StoreWatcher, watchStore } from './events/store-watcher.ts';
import { allowedMethods } from './http/allowed-methods.ts';
import { limitBody } from './http/body-limit.ts';
import { parseTrustedProxies } from './http/client-address.ts';
import { toErrorReply } from './http/error-status.ts';
import { isApiPath, securityHeaders } from './http/security-headers.ts';
import { ServerError } from './http/server-error.ts';
import { createServerMetrics, type MetricsAccess, metricsRoute } from './metrics.ts';
import { type RetentionSchedule, schedulePurge } from './retention-schedule.ts';
import type { ServerContext, ServerEnv } from './server-context.ts';
import { assetRoutes } from './web/assets.ts';
import { authRoutes, WEB_SESSION_TTL_MS } from './web/auth-routes.ts';
import { chatRoutes } from './web/chat-routes.ts';
import { errorPage } from './web/error-page.ts';
import { createFlashStore } from './web/flash-store.ts';
import { inboxRoutes } from './web/inbox-routes.ts';
import { startWebhooks, type WebhookOptions, type WebhookSender } from './webhooks/webhook-sender.ts';
import { createWorkflowDesk, type WorkflowDesk } from './workflows/workflow-desk.ts';

export interface ServerOptions {
  /** The app's agents; they are bound to `store`, `events` (and `model`, when given) here. */
  agents: readonly Agent[];
  store: Store;
  model?: AnyLanguageModel;
  /** Defaults to an in-process bus. */
  events?: EventBus;
  /** Who may sign in: parsed entries or a ready directory. */
  approvers?: readonly ApproverEntry[] | ApproverDirectory;
  /** Trust this header for the signed-in name (only behind a proxy that sets it). */
  identityHeader?: string;
  /** With identityHeader: the header carrying that user's comma-separated roles. */
  rolesHeader?: string;
  /**
   * Serve the customer chat (/chat). Customers sign in with a link holding a token the host
   * application signs with `secret` (HS256, `sub` = customer id, `exp`); see docs/server.md.
   */
  chat?: { secret: string };
  /**
   * Signed notices of new requests and decisions, delivered through `outbox` (with the
   * store's: at least once, surviving restarts, one delivery across instances sharing it).
   */
  webhook?: Omit<WebhookOptions, 'log'>;
  /**
   * Where webhook deliveries wait (default: `store`, when it keeps an outbox, as SQLite and
   * PostgreSQL do; else a process-local one that a restart empties).
   */
  outbox?: Outbox;
  /**
   * Where inbox sign-ins live (default: `store`, when it keeps them, as SQLite and PostgreSQL
   * do; else a process-local one: a restart signs everyone out, other instances do not share it).
   */
  webSessions?: WebSessionStore;
  now?: () => Date;
  /** Largest request body accepted (default 64 KiB); larger gets 413. */
  maxBodyBytes?: number;
  /**
   * Wrong tokens per client address before they get 429 (default 10 per 15 minutes), and
   * from all addresses together (default 10 × maxFailures). A correct token always works.
   */
  login?: { maxFailures?: number; windowMs?: number; maxFailuresTotal?: number };
  /** Reverse proxies whose X-Forwarded-For names the client, as in COUNTERSIGN_TRUST_PROXY. */
  trustProxy?: string;
  secureCookies?: boolean;
  /** The origin browsers use (https://inbox.example.com), when a proxy rewrites Host. */
  publicOrigin?: string;
  /**
   * How late a due expiry, reminder or stalled session may be swept while there is work, and
   * after any event (default 2 s; 0 = never).
   */
  watchIntervalMs?: number;
  /**
   * The longest an idle server sleeps between looks at the store (default 10 s): with nothing
   * due it wakes at the soonest stored expiry or reminder, or within `watchIntervalMs` of an
   * event on the bus; this bounds only what a process that announces nothing here raises.
   */
  watchIdleMs?: number;
  /**
   * How often the live streams and the webhooks read the audit log for what other processes
   * committed (default 1 s; 0 = only when the bus says something happened, as tests do).
   */
  followMs?: number;
  log?: (line: string) => void;
  /** The app's workflows: their runs get /v1/runs and their port requests join the inbox. */
  workflows?: readonly Workflow[];
  /** Where workflow runs live (default: `store`, when it keeps checkpoints too). */
  checkpoints?: CheckpointStore;
  /** Roles request ports need, by port id, for ports that do not declare one themselves. */
  portRoles?: Record<string, string>;
  /** `GET /metrics` for Prometheus: 'off' (default), 'open', or `{ token }` (docs/deployment.md). */
  metrics?: MetricsAccess;
  /** With encryption at rest: the keyring whose data keys `POST /v1/customers/{id}/erase` destroys. */
  dataKeys?: DataKeyForgetter;
  /** The app's state keys that are one customer's (AppModule.customerState), erased with them. */
  customerState?: (principal: string) => readonly StateKey[];
  /**
   * Purge what is past its period on a schedule (COUNTERSIGN_RETENTION): every `intervalMs`
   * (default hourly), at most `maxBatches` bounded batches per pass.
   */
  retention?: RetentionSchedule;
}

export interface CountersignServer {
  app: Hono<ServerEnv>;
  events: EventBus;
  /** The live events the streams send, read from the audit log (events/live-feed.ts). */
  feed: LiveFeed;
  /** One pass of the store watcher, then the live feed catches up with the audit log. */
  watch(): Promise<void>;
  /** Resolves when no webhook delivery is in flight. */
  webhooksIdle(): Promise<void>;
  /** One retention pass now (tests call it instead of waiting); null without `retention`. */
  purge(): Promise<PurgeReport | null>;
  close(): Promise<void>;
}

/** The server ports: given, else the store's own (SQLite, PostgreSQL), else process-local ones. */
export function outboxOf(options: Pick<ServerOptions, 'store' | 'outbox'>): Outbox {
  return options.outbox ?? (isOutbox(options.store) ? options.store : createMemoryOutbox());
}

export function webSessionStoreOf(options: Pick<ServerOptions, 'store' | 'webSessions'>): WebSessionStore {
  return (
    options.webSessions ?? (isWebSessionStore(options.store) ? options.store : createMemoryWebSessionStore())
  );
}

/** Runs of the app's workflows, their agents bound like the server's own. */
function workflowDesk(options: ServerOptions, events: EventBus): WorkflowDesk {
  const checkpoints = options.checkpoints ?? (isCheckpointStore(options.store) ? options.store : null);
  if (!checkpoints)
    throw new ConfigError('The app has workflows, but the store keeps no workflow runs.', {
      hint: 'Pass `checkpoints` (a CheckpointStore), or use a store that keeps them (SQLite, PostgreSQL).',
    });
  const workflows = options.workflows ?? [];
  const now = options.now ?? (() => new Date());
  const runner = createWorkflowRunner({
    workflows,
    checkpoints,
    // An agent's call a run waits on is a row of the agents' store.
    agentRequests: options.store,
    bindAgent: (agent) =>
      agent.with({ store: options.store, events, ...(options.model ? { model: options.model } : {}) }),
    now,
    // A checkpoint store that is not the agents' store keeps no audit trail: the agents' takes
    // the workflow entries (appended after each write). The same store commits them with it.
    audit: options.store,
    portRoles: options.portRoles ?? {},
  });
  return createWorkflowDesk({ runner, workflows, checkpoints });
}

/**
 * The HTTP API (/v1), the approval inbox (/) and, when enabled, the customer chat (/chat),
 * as one Hono app. It does not listen; `startServer` (or a test's `app.request`) drives it.
 */
export function createServer(options: ServerOptions): CountersignServer {
  // A period no purge could compute a cutoff for is refused here, naming the option, not an
  // hour later in a log line from the first scheduled pass.
  if (options.retention) {
    retentionCutoffs(
      options.retention.policy,
      (options.now ?? (() => new Date()))(),
      (kind) => `retention.policy.${kind}`,
    );
  }
  const events = options.events ?? createMemoryEventBus();
  const agents = createAgentRegistry(
    options.agents.map((agent) =>
      agent.with({ store: options.store, events, ...(options.model ? { model: options.model } : {}) }),
    ),
  );
  const approvers =
    options.approvers && 'authenticate' in options.approvers
      ? options.approvers
      : createApproverDirectory((options.approvers as readonly ApproverEntry[] | undefined) ?? []);
  const auth: AuthConfig = {
    approvers,
    identityHeader: options.identityHeader?.toLowerCase(),
    rolesHeader: options.rolesHeader?.toLowerCase(),
    // In the store: sign-ins survive restarts and work on every instance sharing it.
    webSessions: createWebSessions({
      store: webSessionStoreOf(options),
      approvers,
      ttlMs: WEB_SESSION_TTL_MS,
      now: () => (options.now ?? (() => new Date()))().getTime(),
    }),
    limiter: createRateLimiter({
      maxFailures: options.login?.maxFailures ?? 10,
      windowMs: options.login?.windowMs ?? 15 * 60_000,
      ...(options.login?.maxFailuresTotal ? { maxFailuresTotal: options.login.maxFailuresTotal } : {}),
    }),
    trustedProxies: parseTrustedProxies(options.trustProxy, 'trustProxy'),
    csrfSecret: randomBytes(32),
  };
  const desk = options.workflows?.length ? workflowDesk(options, events) : null;
  const requestBook = requestBooks([
    options.store,
    desk && isRequestReader(desk.checkpoints) ? desk.checkpoints : null,
  ]);
  const requests = createRequestDesk({
    store: requestBook,
    timers: options.store,
    ...(options.now ? { now: options.now } : {}),
    agentFor: (name) => agents.get(name),
    runner: desk?.runner ?? null,
    workflows: options.workflows ?? [],
  });
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // Once per server: a PostgreSQL store without pg_trgm serves text search by walking lists.
  const textSearch = textSearchNotice(options.store);
  if (textSearch !== null) log(textSearch);
  const feed = createLiveFeed({
    log: options.store,
    bus: events,
    pollMs: options.followMs ?? 1000,
    onError: onceEach((message) => log(`countersign: live events could not read the audit log: ${message}`)),
  });
  const ctx: ServerContext = {
    requests,
    requestBook,
    store: options.store,
    agents,
    events,
    feed,
    auth,
    flashes: createFlashStore(),
    now: options.now ?? (() => new Date()),
    chat: options.chat !== undefined,
    secureCookies: options.secureCookies ?? false,
    publicOrigin: options.publicOrigin,
    desk,
    erasure: {
      ...(desk && desk.checkpoints !== (options.store as unknown) ? { checkpoints: desk.checkpoints } : {}),
      ...(options.dataKeys ? { keys: options.dataKeys } : {}),
      ...(options.customerState ? { customerState: options.customerState } : {}),
    },
  };
  const streams: StreamRegistry = new Set();
  const app = new Hono<ServerEnv>();

  // Set before the route runs: every response the route builds through the context starts
  // with them, and setting headers on a finished response would make Hono copy it whole.
  app.use('*', async (c, next) => {
    for (const [name, value] of Object.entries(securityHeaders(c.req.path))) c.header(name, value);
    await next();
  });

  // Before sign-in is resolved: probes carry no credentials and must not touch the sessions.
  healthRoutes(app, options.store);
  const metrics = options.metrics && options.metrics !== 'off' ? createServerMetrics(options.store) : null;
  if (metrics && options.metrics) metricsRoute(app, metrics, options.metrics);

  app.use('*', async (c, next) => {
    c.set('caller', await resolveCaller(c, auth));
    const caller = c.get('caller');
    const unsafe = c.req.method !== 'GET' && c.req.method !== 'HEAD';
    if (isApiPath(c.req.path) && unsafe && caller) {
      // A browser's ambient credentials (the inbox cookie, a proxy's sign-in) may read the
      // API but never change anything through it; the inbox's forms carry CSRF tokens.
      if (caller.identity.via === 'cookie')
        throw new ServerError(
          'UNAUTHENTICATED',
          'API changes need a bearer token; the inbox cookie only reads.',
        );
      if (caller.identity.via === 'header' && !sameOrigin(c, ctx.publicOrigin))
        throw new ServerError('UNAUTHENTICATED', 'This request came from another site.');
    }
    await next();
  });

  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024;
  app.use(
    '*',
    limitBody(maxBodyBytes, () => {
      throw new ServerError('PAYLOAD_TOO_LARGE', `The request body is larger than ${maxBodyBytes} bytes.`);
    }),
  );

  app.get('/v1/openapi.json', (c) => c.json(openApiDocument({ runs: desk !== null })));
  sessionRoutes(app, ctx);
  requestRoutes(app, ctx);
  claimRoutes(app, ctx);
  approvalRoutes(app, ctx);
  ledgerRoutes(app, ctx);
  erasureRoutes(app, ctx);
  eventRoutes(app, ctx, streams);
  if (desk) runRoutes(app, desk, ctx);
  assetRoutes(app);
  authRoutes(app, ctx);
  inboxRoutes(app, ctx);
  if (options.chat)
    chatRoutes(
      app,
      ctx,
      streams,
      createChatSignIns(options.chat.secret, () => ctx.now().getTime()),
    );

  // Read at the first miss: by then every route is registered.
  let methodsOf: ((path: string) => string[]) | undefined;
  app.notFound((c) => {
    methodsOf ??= allowedMethods(app.routes);
    const allow = methodsOf(c.req.path);
    if (allow.length > 0 && !allow.includes(c.req.method)) {
      c.header('allow', allow.join(', '));
      const message = `This path does not answer ${c.req.method}; it answers ${allow.join(', ')}.`;
      if (isApiPath(c.req.path)) return c.json({ error: { code: 'METHOD_NOT_ALLOWED', message } }, 405);
      return errorPage(c, 405, message);
    }
    if (isApiPath(c.req.path))
      return c.json(
        { error: { code: 'NOT_FOUND', message: `No route ${c.req.method} ${c.req.path}.` } },
        404,
      );
    return errorPage(c, 404, 'There is no page here.');
  });

  app.onError((error, c) => {
    const reply = toErrorReply(error);
    if (reply.body.error.code === 'INTERNAL')
      log(`countersign: ${c.req.method} ${c.req.path} failed: ${error.stack ?? error}`);
    if (isApiPath(c.req.path) || !(c.req.header('accept') ?? '').includes('text/html')) {
      return c.json(reply.body, reply.status as 400, reply.headers);
    }
    if (reply.status === 401) return c.redirect('/login', 303);
    for (const [name, value] of Object.entries(reply.headers)) c.header(name, value);
    return errorPage(c, reply.status as 400, reply.body.error.message, reply.body.error.code);
  });

  const webhooks: WebhookSender | null = options.webhook
    ? startWebhooks(events, options.store, outboxOf(options), {
        ...(options.followMs !== undefined ? { followMs: options.followMs } : {}),
        ...options.webhook,
        log,
      })
    : null;
  const watcher: StoreWatcher = watchStore({
    store: options.store,
    events,
    agents,
    now: ctx.now,
    intervalMs: options.watchIntervalMs ?? 2000,
    ...(options.watchIdleMs !== undefined ? { idleMs: options.watchIdleMs } : {}),
    log,
    ...(desk ? { runs: desk.runner, runsInStore: desk.checkpoints === (options.store as unknown) } : {}),
  });

  const purger = options.retention
    ? schedulePurge({
        store: options.store,
        ...(ctx.erasure.checkpoints ? { checkpoints: ctx.erasure.checkpoints } : {}),
        now: ctx.now,
        log,
        ...options.retention,
      })
    : null;

  return {
    app,
    events,
    feed,
    purge: async () => purger?.tick() ?? null,
    async watch() {
      await watcher.tick();
      await feed.catchUp();
    },
    webhooksIdle: async () => webhooks?.idle(),
    async close() {
      for (const end of [...streams]) end();
      metrics?.stop();
      await Promise.all([webhooks?.stop(), watcher.stop(), feed.close(), purger?.stop()]);
    },
  };
}
