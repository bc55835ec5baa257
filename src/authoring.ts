/**
 * `countersign/authoring`: what an app module (COUNTERSIGN_APP) needs to define its agents,
 * tools and workflows, and nothing else: no HTTP server, no PostgreSQL, no file stores. The
 * CLI imports the app for every decision (`countersign approve`), so an app that imports
 * this entry instead of `countersign` starts several hundred milliseconds sooner. Every
 * export here is also exported by `countersign` itself (src/index.ts).
 */
export type { AutoApprovalRule } from './agent/auto-approval-rule.ts';
export { type Agent, type AgentOptions, createAgent, type DecideInput } from './agent/create-agent.ts';
export type { ApprovalView, ExecutionView, TurnResult, TurnStatus } from './agent/views.ts';
export * from './core/approval.ts';
export type { PolicyAnswer } from './core/approval-requirement.ts';
export { canonicalJson, readableJson, sha256Hex } from './core/canonical-json.ts';
export * from './core/errors/index.ts';
export type { JsonObject, JsonValue } from './core/json.ts';
export type { Message, ToolCall, ToolResult } from './core/messages.ts';
export {
  type ApprovalPolicy,
  type ApprovalRequirementInput,
  type AuthorizeResult,
  defineTool,
  type OnNewMessage,
  type Tool,
  type ToolContext,
  type ToolOptions,
  type ToolState,
} from './tools/define-tool.ts';
export {
  type AgentExecutor,
  type AgentExecutorOptions,
  type AgentExecutorState,
  type AgentReply,
  type ApprovalAnswer,
  type ApprovalAsk,
  agentExecutor,
} from './workflow/agent-executor.ts';
export {
  defineWorkflow,
  type Workflow,
  type WorkflowBuilder,
  type WorkflowContract,
  type WorkflowMigration,
} from './workflow/define-workflow.ts';
export {
  type AnyRequestPort,
  type Executor,
  type ExecutorAnswer,
  type ExecutorOptions,
  executor,
} from './workflow/executor.ts';
export type {
  AnsweredRequest,
  ExecutorContext,
  RequestOptions,
  WorkflowState,
} from './workflow/executor-context.ts';
export { type RequestPort, requestPort } from './workflow/request-port.ts';
export type { WorkflowNode } from './workflow/workflow-node.ts';
