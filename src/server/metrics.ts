import { timingSafeEqual } from 'node:crypto';
import type { Hono } from 'hono';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { ConfigError } from '../core/errors/config-error.ts';
import { onSignal } from '../core/signals.ts';
import type { RequestBook } from '../store/ports/request-book.ts';
import type { ServerEnv } from './server-context.ts';

/**
 * Who may read `GET /metrics`: nobody (`'off'`, the default: the route is not there), anyone
 * who reaches the port (`'open'`, like /healthz, for a scraper on a private network), or a
 * scraper that sends `Authorization: Bearer TOKEN`.
 */
export type MetricsAccess = 'off' | 'open' | { token: string };

/**
 * Prometheus metrics of one server, in its own Registry (never prom-client's global one), so
 * two servers in one process do not clash. Counters count what this process did; the
 * waiting-requests gauge reads the store's count when scraped. Labels are kinds and verdicts
 * only: no ids, names or arguments.
 */
export interface ServerMetrics {
  registry: Registry;
  /** Stops counting (the server's close). */
  stop(): void;
}

/** Seconds from a request's creation to its decision: a minute to a few days. */
const DECISION_BUCKETS = [1, 10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400];

export function createServerMetrics(requests: Pick<RequestBook, 'countPending'>): ServerMetrics {
  const registry = new Registry();
  const registers = [registry];
  const decisions = new Counter({
    name: 'countersign_decisions_total',
    help: 'Requests decided by a person, by verdict and request kind.',
    labelNames: ['verdict', 'kind'] as const,
    registers,
  });
  const timeToDecision = new Histogram({
    name: 'countersign_time_to_decision_seconds',
    help: 'Seconds from a request being raised to its decision, by request kind.',
    labelNames: ['kind'] as const,
    buckets: DECISION_BUCKETS,
    registers,
  });
  const expiries = new Counter({
    name: 'countersign_expiries_total',
    help: 'Requests that expired without a decision, by request kind.',
    labelNames: ['kind'] as const,
    registers,
  });
  const unknown = new Counter({
    name: 'countersign_unknown_outcomes_total',
    help: 'Approved calls whose outcome became unknown (a process died mid-call); each needs reconciling.',
    registers,
  });
  const modelErrors = new Counter({
    name: 'countersign_model_errors_total',
    help: 'Model steps that failed after their retries.',
    registers,
  });
  const countPending = requests.countPending?.bind(requests);
  if (countPending !== undefined) {
    new Gauge({
      name: 'countersign_requests_waiting',
      help: 'Requests waiting for a decision (both kinds), counted by the store when scraped.',
      registers,
      async collect() {
        this.set(await countPending());
      },
    });
  }
  const stop = onSignal((signal) => {
    if (signal.kind === 'decided') {
      decisions.inc({ verdict: signal.verdict, kind: signal.requestKind });
      timeToDecision.observe({ kind: signal.requestKind }, signal.waitedMs / 1000);
    } else if (signal.kind === 'expired') expiries.inc({ kind: signal.requestKind });
    else if (signal.kind === 'outcome-unknown') unknown.inc();
    else modelErrors.inc();
  });
  return { registry, stop };
}

/** `GET /metrics` in Prometheus' text format, before sign-in (a scraper has no session). */
export function metricsRoute(app: Hono<ServerEnv>, metrics: ServerMetrics, access: MetricsAccess): void {
  if (access === 'off') return;
  const expected = access === 'open' ? null : Buffer.from(`Bearer ${access.token}`);
  app.get('/metrics', async (c) => {
    if (expected !== null) {
      const given = Buffer.from(c.req.header('authorization') ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        c.header('www-authenticate', 'Bearer');
        return c.json(
          { error: { code: 'UNAUTHORIZED', message: 'GET /metrics needs its bearer token.' } },
          401,
        );
      }
    }
    c.header('cache-control', 'no-store');
    c.header('content-type', metrics.registry.contentType);
    return c.body(await metrics.registry.metrics());
  });
}

/** COUNTERSIGN_METRICS (off | open | token) and COUNTERSIGN_METRICS_TOKEN, for `countersign serve`. */
export function metricsAccessFromEnv(env: Record<string, string | undefined>): MetricsAccess {
  const mode = env.COUNTERSIGN_METRICS?.trim() || 'off';
  if (mode === 'off' || mode === 'open') return mode;
  if (mode === 'token') {
    const token = env.COUNTERSIGN_METRICS_TOKEN?.trim();
    if (!token || token.length < 16)
      throw new ConfigError(
        'COUNTERSIGN_METRICS=token needs COUNTERSIGN_METRICS_TOKEN (16 characters or more).',
        {
          hint: 'Set COUNTERSIGN_METRICS_TOKEN to a long random string and give the same to your scraper as a bearer token.',
        },
      );
    return { token };
  }
  throw new ConfigError(`COUNTERSIGN_METRICS is ${mode}: it takes off, open or token.`, {
    hint: 'Unset it (no /metrics), or set it to open (anyone who reaches the port) or token (with COUNTERSIGN_METRICS_TOKEN).',
  });
}
