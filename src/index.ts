export type { AutoApprovalRule } from './agent/auto-approval-rule.ts';
export {
  type Agent,
  type AgentOptions,
  type ChatOptions,
  createAgent,
  type DecideInput,
} from './agent/create-agent.ts';
export { type ExportKeyring, parseExportKeys } from './agent/export-keys.ts';
export {
  type ImportableModelMessage,
  type ImportedConversation,
  type ImportModelMessagesOptions,
  importModelMessages,
  UNANSWERED_OUTPUT,
} from './agent/import-model-messages.ts';
export {
  auditTrail,
  listExecutions,
  listPending,
  listRules,
  revokeRule,
  showRequest,
  sweepExpired,
  verifyAudit,
} from './agent/queries.ts';
export {
  exportSession,
  importSession,
  type SessionExport,
  type SessionExportOptions,
  type SessionImportOptions,
  type SessionImportResult,
} from './agent/session-transfer.ts';
export type { ApprovalView, ExecutionView, TurnResult, TurnStatus } from './agent/views.ts';
// The workflow authoring surface is the same bindings as countersign/authoring's.
export * from './authoring.ts';
export * from './core/approval.ts';
export type { PolicyAnswer } from './core/approval-requirement.ts';
export type {
  AuditEntry,
  AuditEvent,
  AuditEventMap,
  AuditKind,
  AuditVerification,
  EditedCall,
  NudgeEntry,
  PortRequestEntry,
  RecordedCall,
} from './core/audit.ts';
export { AUDIT_KEY_DESTROYED, auditDataDigest } from './core/audit.ts';
export { canonicalJson, readableJson, sha256Hex } from './core/canonical-json.ts';
export * from './core/errors/index.ts';
export type { ExecutionRecord, ExecutionStatus } from './core/execution.ts';
export type { JsonObject, JsonValue } from './core/json.ts';
export type { Message, StoredMessage, ToolCall, ToolResult } from './core/messages.ts';
export {
  parseRetention,
  RETENTION_KINDS,
  type RetentionKind,
  type RetentionPolicy,
  retentionCutoffs,
} from './core/retention.ts';
export type { BatchCall, CallDisposition, KeptCall, OpenBatch, SessionRecord } from './core/session.ts';
// Encryption at rest (docs/security.md): the codec, the keyring, the KeyProvider port.
export { keyringOf, withKeyring } from './crypto/encrypted-store.ts';
export { encryptingCodec } from './crypto/encrypting-codec.ts';
export { createEncryption, type Encryption, encryptionFromEnv } from './crypto/encryption.ts';
export { ENCRYPTION_KEYS_VAR, envKeyProvider, parseEncryptionKeys } from './crypto/env-key-provider.ts';
export { ERASED_MARKER, ERASED_TEXT, type ErasedValue, isErased } from './crypto/erased.ts';
export type { KeyProvider, WrappedKey } from './crypto/key-provider.ts';
export { type KeyRotation, Keyring, type LoadedKey, type ScopeOwner } from './crypto/keyring.ts';
export { type KeyRotationReport, rotateDataKeys } from './crypto/rotate-keys.ts';
// Erasure and retention (docs/security.md#erasure): the same functions the CLI and the API call.
export {
  type DataKeyForgetter,
  ERASURE_INTENTS,
  type EraseOptions,
  type ErasureReport,
  erasePrincipal,
  type StateKey,
} from './erasure/erase-principal.ts';
export { type PurgeOptions, type PurgeReport, purge } from './erasure/purge.ts';
export type { CountersignEvent, EventBus, EventListener } from './events/event-bus.ts';
export { createMemoryEventBus } from './events/memory/memory-event-bus.ts';
// The PostgreSQL exports live in countersign/postgres; these stay for one release. pg is
// imported on first use inside each, so they cost SQLite users nothing (test/entry-points).
export {
  createPostgresEventBus,
  type PostgresEventBus,
  type PostgresEventBusOptions,
} from './events/postgres/postgres-event-bus.ts';
// Whether a lease holder is alive across hosts (Store.liveness; src/liveness/).
export type { Liveness, LivenessChange } from './liveness/liveness.ts';
export type { ModelCallHooks, RetryNotice } from './model/call-model.ts';
export { createDemoModel } from './model/demo-model.ts';
export type { AnyLanguageModel } from './model/language-model.ts';
export { resolveModel } from './model/resolve-model.ts';
export type { RetryOptions } from './model/retry-policy.ts';
export type {
  ContinuationJob,
  ContinuationQueue,
  ContinuationWorkOptions,
} from './queue/continuation-queue.ts';
export { createPgBossQueue, type PgBossQueueOptions } from './queue/pg-boss/pg-boss-queue.ts';
// The one decide path for both kinds of request (tool calls and workflow port requests).
export { approvalAnswer, approvalFields, type ResponseSchema } from './requests/answer-shape.ts';
export { isRequestReader, type RequestReader, requestBooks } from './requests/request-books.ts';
export {
  createRequestDesk,
  type RequestDecider,
  type RequestDecision,
  type RequestDesk,
  type RequestDeskOptions,
  type RequestOutcome,
} from './requests/request-desk.ts';
export { requestStats, statsWindow } from './requests/request-stats.ts';
// createServer and startServer moved to countersign/server (they load hono). The webhook
// signature helpers stay here too: they need node:crypto only.
export { signPayload, verifySignature } from './server/webhooks/signature.ts';
export { deliveryId, type WebhookPayload } from './server/webhooks/webhook-sender.ts';
export {
  type CheckpointStore,
  type CheckpointSummary,
  type CheckpointWriteOptions,
  type ClaimResult,
  isCheckpointStore,
  type RunPage,
  type RunPageQuery,
  type RunSort,
  type RunStatus,
  type RunSummary,
  type SaveCheckpointResult,
  type StoredCheckpoint,
} from './store/checkpoint-store.ts';
export type { PayloadCodec } from './store/codec.ts';
export { jsonCodec } from './store/codec.ts';
export {
  createFileCheckpointStore,
  type FileCheckpointStore,
  type FileCheckpointStoreOptions,
} from './store/fs/file-checkpoint-store.ts';
// A backend of yours returns guardStore(raw): the input checks every backend shares.
export { guardStore } from './store/guard.ts';
export { createMemoryCheckpointStore } from './store/memory/memory-checkpoint-store.ts';
export { createMemoryStore } from './store/memory/memory-store.ts';
export { openCheckpointStore } from './store/open-checkpoint-store.ts';
export { openStore } from './store/open-store.ts';
export type { DataKeyRecord, DataKeys } from './store/ports/data-keys.ts';
export type {
  ApprovalUpdate,
  ApprovalUpdateResult,
  DueQuery,
  RequestBook,
  RuleBook,
} from './store/ports/request-book.ts';
export type {
  ClaimChange,
  DueWork,
  NudgeAdvance,
  NudgeDueQuery,
  NudgeTimeChange,
  RequestClaimResult,
  RequestTimers,
} from './store/ports/request-timers.ts';
export {
  createPostgresStore,
  type PostgresStore,
  type PostgresStoreOptions,
} from './store/postgres/postgres-store.ts';
export { createSqliteStore } from './store/sqlite/sqlite-store.ts';
// Every type a backend implements (test/backend-types.test.ts walks Store and CheckpointStore).
export type {
  ApprovalFilter,
  ApprovalWithSession,
  ApproverCount,
  AppState,
  AuditLog,
  AuditQuery,
  DecideOptions,
  DecideResult,
  DecisionStats,
  DecisionStatsPort,
  DecisionTimes,
  Delivery,
  DeliveryClaim,
  DeliveryEnqueue,
  DeliveryOutcome,
  DeliveryStatus,
  ErasureCounts,
  ExecutionFilter,
  ExecutionFinish,
  ExecutionStart,
  ExecutionStartResult,
  LeaseFence,
  LeaseInfo,
  LeaseRenewal,
  LeaseRequest,
  Leases,
  Ledger,
  Outbox,
  PageTotal,
  PrincipalErasure,
  PrincipalErasureInput,
  PurgeBatch,
  PurgeCounts,
  ReasonCount,
  RequestPage,
  RequestPageQuery,
  RequestSort,
  Retention,
  RetentionCutoffs,
  RunStart,
  SessionLog,
  SessionSnapshot,
  SessionTransfer,
  StalledSession,
  StalledSessionQuery,
  StandingRule,
  StatsQuery,
  StepCommit,
  Store,
  WebSessionRecord,
  WebSessionStore,
} from './store/store.ts';
export {
  type AiSdkApprovalOptions,
  type AiSdkToolLike,
  withApproval,
} from './tools/ai-sdk-tool.ts';
export {
  type ApprovalOptions,
  type ApprovalPolicy,
  type ApprovalRequirementInput,
  type AuthorizeResult,
  defineTool,
  type InferToolArgs,
  type OnNewMessage,
  type Tool,
  type ToolContext,
  type ToolOptions,
  type ToolState,
} from './tools/define-tool.ts';
export type { InputCheck, JsonSchemaObject, ToolInputSchema } from './tools/input-schema.ts';
export type { AgentTool, AgentTools } from './tools/normalize-tools.ts';
export type {
  ExpiredRequest,
  PendingMessage,
  PendingRequest,
  RunError,
  WorkflowRunState,
} from './workflow/run-state.ts';
export type { RequestView, RunView } from './workflow/run-view.ts';
export {
  createWorkflowRunner,
  type ExpiredWorkflowRequest,
  type WorkflowRunner,
  type WorkflowRunnerOptions,
} from './workflow/runner.ts';
export type { WorkflowNode } from './workflow/workflow-node.ts';
