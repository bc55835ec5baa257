/**
 * Whose data a payload is, as the codec is told at encode time. A session's scope resolves to
 * its principal's key (one key per customer); a session without a principal has a key of its
 * own, and so has a workflow run. Data of no one customer (app state, webhook bodies,
 * decisions) is under the store's key.
 */
export const STORE_SCOPE = 'store';

export const sessionScope = (session: string): string => `session:${session}`;
export const principalScope = (principal: string): string => `principal:${principal}`;
export const runScope = (run: string): string => `run:${run}`;

/** A request's data belongs to its customer when it has one, else to its session or run. */
export function requestScope(request: {
  customer: string | null;
  session: string;
  run: string | null;
}): string {
  if (request.customer !== null) return principalScope(request.customer);
  return request.run !== null ? runScope(request.run) : sessionScope(request.session);
}

export const KEY_SCOPE = 'key:';

/**
 * "Whoever this stored value belongs to": the data key a sealed text names, so a value
 * written beside it (a decision beside its request's arguments) needs no look-up of the
 * owner. Null for text the encrypting codec did not write.
 */
export function sameKeyAs(stored: unknown): string | null {
  if (typeof stored !== 'string' || !stored.startsWith('cs1')) return null;
  const start = stored.indexOf(':') + 1;
  const end = stored.indexOf(':', start);
  return start > 0 && end > start ? `${KEY_SCOPE}${stored.slice(start, end)}` : null;
}

/** A decision's scope is its request's, found from the id (decide is given only that). */
export const decisionScope = (requestId: string): string => `request:${requestId}`;
/** A ledger result's scope is its session's, found from the request id when only that is known. */
export const executionScope = (requestId: string): string => `execution:${requestId}`;

/** An audit entry's data belongs to its session's owner, else its request's; else to the store. */
export function auditScope(event: { session: string | null; requestId: string | null }): string {
  if (event.session !== null) return sessionScope(event.session);
  return event.requestId !== null ? decisionScope(event.requestId) : STORE_SCOPE;
}

/** Scopes that name their owner directly; the others are resolved through the store once. */
export function isOwnerScope(scope: string): boolean {
  return scope === STORE_SCOPE || scope.startsWith('principal:') || scope.startsWith('run:');
}
