export { type Agent, type AgentOptions, createAgent, type DecideInput } from './agent/create-agent.ts';
export {
  auditTrail,
  listExecutions,
  listPending,
  showRequest,
  sweepExpired,
  verifyAudit,
} from './agent/queries.ts';
export { exportSession, importSession, type SessionExport } from './agent/session-transfer.ts';
export type { ApprovalView, ExecutionView, TurnResult, TurnStatus } from './agent/views.ts';
export * from './core/approval.ts';
export type { AuditEntry, AuditEvent, AuditKind, AuditVerification } from './core/audit.ts';
export { canonicalJson, readableJson, sha256Hex } from './core/canonical-json.ts';
export * from './core/errors/index.ts';
export type { JsonObject, JsonValue } from './core/json.ts';
export type { Message, ToolCall, ToolResult } from './core/messages.ts';
export { createDemoModel } from './model/demo-model.ts';
export type { AnyLanguageModel } from './model/language-model.ts';
export { resolveModel } from './model/resolve-model.ts';
export type { PayloadCodec } from './store/codec.ts';
export { jsonCodec } from './store/codec.ts';
export { createMemoryStore } from './store/memory/memory-store.ts';
export { openStore } from './store/open-store.ts';
export { createSqliteStore } from './store/sqlite/sqlite-store.ts';
export type { Store } from './store/store.ts';
export {
  type ApprovalPolicy,
  type AuthorizeResult,
  defineTool,
  type Tool,
  type ToolContext,
  type ToolOptions,
  type ToolState,
} from './tools/define-tool.ts';
