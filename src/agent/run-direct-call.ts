import type { AuditEvent } from '../core/audit.ts';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import type { ToolResult } from '../core/messages.ts';
import type { BatchCall } from '../core/session.ts';
import type { Tool, ToolContext } from '../tools/define-tool.ts';
import { toolOutput } from '../tools/tool-output.ts';

/**
 * A call that needs no approval runs without a ledger: reads and reversible writes. The
 * audit entries it produces (a refusal, a logged call) are returned for the caller to
 * write with its next step.
 */
export async function runDirectCall(
  call: BatchCall,
  tool: Tool | undefined,
  context: ToolContext,
  audit: { session: string; actor: string },
): Promise<{ result: ToolResult; audit: AuditEvent[] }> {
  const base = { callId: call.callId, tool: call.tool };
  // The batch may not be what classify wrote (an imported file, an edited row): a call
  // that needs approval never runs on a stored "run" alone.
  const problem = !tool
    ? `there is no tool "${call.tool}"`
    : (await tool.needsApproval(call.args, context))
      ? 'it needs approval but was stored as needing none'
      : null;
  if (problem !== null || !tool) {
    return {
      result: { ...base, output: `Not done: ${problem}. The call was refused for safety.`, isError: true },
      audit: [
        {
          kind: 'tamper.refused',
          session: audit.session,
          requestId: null,
          actor: audit.actor,
          data: { tool: call.tool, callId: call.callId, problem: problem ?? 'unknown tool' },
        },
      ],
    };
  }
  try {
    const allowed = await tool.authorize(call.args, context);
    if (allowed !== true)
      return { result: { ...base, output: `Not allowed: ${allowed}`, isError: true }, audit: [] };
    const output = toolOutput(await tool.execute(call.args, context));
    const logged: AuditEvent[] = tool.logged
      ? [
          {
            kind: 'call.logged',
            session: audit.session,
            requestId: null,
            actor: audit.actor,
            data: {
              tool: tool.name,
              args: canonicalJson(call.args),
              resultHash: sha256Hex(canonicalJson(output)),
            },
          },
        ]
      : [];
    return { result: { ...base, output }, audit: logged };
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return { result: { ...base, output: `The tool failed: ${detail}`, isError: true }, audit: [] };
  }
}
