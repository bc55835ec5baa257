import type { Hono } from 'hono';
import { CountersignError } from '../../core/errors/countersign-error.ts';
import { hasSchemaVersion } from '../../store/ports/schema-version.ts';
import type { Store } from '../../store/store.ts';
import type { ServerEnv } from '../server-context.ts';

/** How long readiness waits for the store before answering 503. */
const STORE_TIMEOUT_MS = 2000;

/**
 * `GET /healthz`: the process is up and serving. `GET /readyz`: the store answers a keyed
 * read (one primary-key lookup, no scan). Both are open to anyone and say nothing about the
 * data, so a load balancer or an orchestrator can call them without a token. Readiness also
 * compares the store's schema with this countersign's migrations (one read of a version
 * number): an instance still running after another one upgraded the shared schema is not
 * ready, and says to upgrade it.
 */
export function healthRoutes(app: Hono<ServerEnv>, store: Store): void {
  app.on(['GET', 'HEAD'], '/healthz', (c) => {
    c.header('cache-control', 'no-store');
    return c.json({ status: 'ok' });
  });
  app.on(['GET', 'HEAD'], '/readyz', async (c) => {
    c.header('cache-control', 'no-store');
    const problem = await storeProblem(store);
    if (problem === null) return c.json({ status: 'ready', store: store.kind });
    c.header('retry-after', '5');
    return c.json({ status: 'unavailable', store: store.kind, reason: problem }, 503);
  });
}

async function schemaProblem(store: Store): Promise<string | null> {
  if (!hasSchemaVersion(store)) return null;
  const { current, known } = await store.schemaVersion();
  if (current === known) return null;
  return current > known
    ? `the store's schema is at version ${current}, newer than this countersign knows (${known}): another instance upgraded it; upgrade this one`
    : `the store's schema is at version ${current}, older than this countersign's (${known}): restart to migrate it`;
}

async function storeProblem(store: Store): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(
      () => resolve(`the ${store.kind} store did not answer within ${STORE_TIMEOUT_MS} ms`),
      STORE_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([store.getSession('readyz-probe').then(() => schemaProblem(store)), timeout]);
  } catch (error) {
    const what = CountersignError.is(error) ? error.code : 'an error';
    // The message may name hosts or paths: the route is public, so it gives the code only.
    return `the ${store.kind} store failed a read with ${what}; check that the store is up and that COUNTERSIGN_STORE names it`;
  } finally {
    clearTimeout(timer);
  }
}
