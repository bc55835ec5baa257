/**
 * `countersign/server`: the HTTP API, the approval inbox and the customer chat (hono and
 * @hono/node-server). Apart from `countersign`, so that a library user who never serves
 * HTTP does not load them.
 */
export {
  type ApproverDirectory,
  type ApproverEntry,
  createApproverDirectory,
  parseApproverEntries,
} from './server/auth/approver-tokens.ts';
export type { Identity } from './server/auth/identity.ts';
export {
  type CountersignServer,
  createServer,
  type ServerOptions,
} from './server/create-server.ts';
export type { MetricsAccess } from './server/metrics.ts';
export { type EnvServerConfig, serverConfigFromEnv } from './server/server-config.ts';
export { type RunningServer, startServer } from './server/start-server.ts';
export { SIGNATURE_HEADER, signPayload, verifySignature } from './server/webhooks/signature.ts';
export {
  deliveryId,
  type WebhookEventType,
  type WebhookOptions,
  type WebhookPayload,
} from './server/webhooks/webhook-sender.ts';
// The process-local server ports createServer uses for a store that keeps none of its own.
export { createMemoryOutbox } from './store/memory/memory-outbox.ts';
export { createMemoryWebSessionStore } from './store/memory/memory-web-session-store.ts';
