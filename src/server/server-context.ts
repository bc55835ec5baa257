import type { Context } from 'hono';
import type { DataKeyForgetter, StateKey } from '../erasure/erase-principal.ts';
import type { EventBus } from '../events/event-bus.ts';
import type { RequestReader } from '../requests/request-books.ts';
import type { RequestDesk } from '../requests/request-desk.ts';
import type { CheckpointStore } from '../store/checkpoint-store.ts';
import type { Store } from '../store/store.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { AuthConfig, Caller } from './auth/caller.ts';
import type { Identity } from './auth/identity.ts';
import type { LiveFeed } from './events/live-feed.ts';
import { ServerError } from './http/server-error.ts';
import type { FlashStore } from './web/flash-store.ts';
import type { WorkflowDesk } from './workflows/workflow-desk.ts';

/** Hono's per-request variables: the caller is resolved once, before any route runs. */
export interface ServerEnv {
  Variables: { caller: Caller | null };
}

/** Everything a route needs, built once by createServer. */
export interface ServerContext {
  store: Store;
  agents: AgentRegistry;
  events: EventBus;
  /** Live events from the audit log, for the SSE streams (events/live-feed.ts). */
  feed: LiveFeed;
  auth: AuthConfig;
  flashes: FlashStore;
  now: () => Date;
  /** Whether the customer chat (/chat) is served. */
  chat: boolean;
  /** Set Secure on the session cookie (behind TLS). */
  secureCookies: boolean;
  publicOrigin: string | undefined;
  /** Workflow runs, when the app has workflows. */
  desk: WorkflowDesk | null;
  /** The one way a decision reaches a request of either kind. */
  requests: RequestDesk;
  /** Where requests of both kinds are read (the store, and a separate checkpoint store's). */
  requestBook: RequestReader;
  /** What erasure reaches besides the store: a separate checkpoint store, the data keys. */
  erasure: {
    checkpoints?: CheckpointStore;
    keys?: DataKeyForgetter;
    customerState?: (principal: string) => readonly StateKey[];
  };
}

export function callerOf(c: Context<ServerEnv>): Caller | null {
  return c.get('caller');
}

/** The authenticated identity, or 401. */
export function requireIdentity(c: Context<ServerEnv>): Identity {
  const caller = callerOf(c);
  if (!caller) throw new ServerError('UNAUTHENTICATED', 'Sign in: send Authorization: Bearer <token>.');
  return caller.identity;
}
