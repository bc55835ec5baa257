import type { LanguageModelV4FunctionTool } from '@ai-sdk/provider';
import type { EventBus } from '../events/event-bus.ts';
import type { ModelCallSettings } from '../model/call-model.ts';
import type { AnyLanguageModel } from '../model/language-model.ts';
import type { Store } from '../store/store.ts';
import type { OnNewMessage, Tool, ToolState } from '../tools/define-tool.ts';
import type { AutoApprovalRule } from './auto-approval-rule.ts';

/** What a SessionRun needs, resolved once per agent rather than once per step. */
export interface AgentRuntime {
  agentName: string;
  /** The workflow run the agent acts in, recorded on the requests it raises; null outside one. */
  run: string | null;
  instructions: string;
  model: AnyLanguageModel;
  /** Retry, streaming and (per run) the chat's listeners for the model calls. */
  modelCall: ModelCallSettings;
  store: Store;
  toolsByName: Map<string, Tool>;
  modelTools: LanguageModelV4FunctionTool[];
  state: ToolState;
  maxSteps: number;
  autoApprove: AutoApprovalRule[];
  oneAtATime: boolean;
  maxAutoApprovedSteps: number;
  approvalTtlMs: number;
  /** The warning lead time for tools that set no `warnBefore`; undefined: none. */
  warnBeforeMs: number | undefined;
  leaseMs: number;
  busyWaitMs: number;
  now: () => Date;
  events: EventBus | undefined;
  /** What a new customer message does to waiting requests, unless their tool says (default 'reject'). */
  onNewMessage: OnNewMessage;
}
