import type { JsonValue } from '../core/json.ts';
import type { ToolContext } from '../tools/define-tool.ts';

/**
 * An approval given by code instead of a person, e.g. "adding milk needs no one". Rules run
 * after the session's standing approvals, in order; the first that returns true approves
 * the call and is named in the audit trail. Match on more than the tool name: any tool
 * registered under that name later would match too.
 */
export interface AutoApprovalRule {
  name: string;
  approve(call: { tool: string; args: JsonValue }, context: ToolContext): boolean | Promise<boolean>;
}
