import type { JSONSchema7, LanguageModelV4FunctionTool } from '@ai-sdk/provider';

export interface ModelToolSpec {
  name: string;
  description: string;
  inputSchema: JSONSchema7;
}

/** Function tools for `doGenerate`; the v4 shape is also a valid v3 function tool. */
export function toModelTools(tools: ReadonlyArray<ModelToolSpec>): LanguageModelV4FunctionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
  }));
}
