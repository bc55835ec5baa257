import type { Store } from '../store/store.ts';
import type { ScopeOwner } from './keyring.ts';
import { principalScope, requestScope, runScope, STORE_SCOPE, sessionScope } from './scopes.ts';

// Port requests belong to a workflow run; their rows name the session `wf.<run>`.
const RUN_SESSION = 'wf.';

/**
 * Owners from the store's own rows: a session's principal (a session without one is its own
 * owner), a request's customer, an execution's session. Reads through the backend itself
 * (not the encrypted wrapper), and only ids and parties, which are never encrypted.
 */
export function scopeOwnerOf(store: Pick<Store, 'getSession' | 'getApproval' | 'getExecution'>): ScopeOwner {
  async function ownerOf(scope: string): Promise<string> {
    const colon = scope.indexOf(':');
    const kind = scope.slice(0, colon);
    const id = scope.slice(colon + 1);
    if (kind === 'session') {
      if (id.startsWith(RUN_SESSION)) return runScope(id.slice(RUN_SESSION.length));
      const session = await store.getSession(id);
      return session?.principal ? principalScope(session.principal) : scope;
    }
    if (kind === 'request') {
      const request = await store.getApproval(id);
      return request === null ? STORE_SCOPE : ownerOf(requestScope(request));
    }
    if (kind === 'execution') {
      const execution = await store.getExecution(id);
      return execution === null ? STORE_SCOPE : ownerOf(sessionScope(execution.session));
    }
    return scope;
  }
  return ownerOf;
}
