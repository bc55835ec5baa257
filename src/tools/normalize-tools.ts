import { ConfigError } from '../core/errors/config-error.ts';
import { type AiSdkToolLike, fromAiSdkTool, isAiSdkTool } from './ai-sdk-tool.ts';
import { isCountersignTool, type Tool } from './define-tool.ts';

/** One tool as an agent accepts it: from defineTool, or an AI SDK `tool({...})`. */
export type AgentTool = Tool | AiSdkToolLike;

/** An array, or a record keyed by tool name as the AI SDK's `tools` option takes it. */
export type AgentTools = ReadonlyArray<AgentTool> | Readonly<Record<string, AgentTool>>;

/** Reads an agent's tools once, when it is built; a wrong shape names the tool and the fix. */
export function normalizeTools(agentName: string, tools: AgentTools | undefined): Tool[] {
  if (typeof tools !== 'object' || tools === null) {
    throw new ConfigError(`Agent ${agentName} has no tools option.`, {
      hint: 'Pass tools: [] for none, an array of tools, or a record { name: tool(...) }.',
    });
  }
  const entries: Array<[string | undefined, unknown, string]> = Array.isArray(tools)
    ? tools.map((tool, index) => [undefined, tool, `Tool #${index + 1} of agent ${agentName}`])
    : Object.entries(tools).map(([key, tool]) => [key, tool, `Tool "${key}" of agent ${agentName}`]);
  const seen = new Set<string>();
  return entries.map(([key, value, where]) => {
    const tool = toTool(key, value, where);
    if (key !== undefined && tool.name !== key) {
      throw new ConfigError(`${where} is named "${tool.name}" but listed under "${key}".`, {
        hint: 'Use the same name for the key and the tool, or pass the tools as an array.',
      });
    }
    if (seen.has(tool.name)) throw new ConfigError(`Agent ${agentName} has two tools named ${tool.name}.`);
    seen.add(tool.name);
    return tool;
  });
}

function toTool(key: string | undefined, value: unknown, where: string): Tool {
  if (isCountersignTool(value)) return value;
  if (isAiSdkTool(value)) return fromAiSdkTool(value, key, where);
  throw new ConfigError(`${where} is neither a defineTool tool nor an AI SDK tool.`, {
    hint: 'Use defineTool({ name, description, input, execute }) or tool({ description, inputSchema, execute }) from "ai".',
  });
}
