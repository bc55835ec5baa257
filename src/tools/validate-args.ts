import type { Tool } from './define-tool.ts';

export type ArgsCheck = { ok: true; args: unknown } | { ok: false; error: string };

/**
 * Invalid arguments are the model's mistake to fix, so they become a readable tool error,
 * never an exception and never a question to a person.
 */
export async function validateArgs(tool: Tool, args: unknown): Promise<ArgsCheck> {
  const checked = await tool.parseArgs(args);
  if (checked.ok) return { ok: true, args: checked.value };
  return {
    ok: false,
    error: `Invalid arguments for ${tool.name}: ${checked.issues.join('; ')}. Nothing was run. Fix the arguments and call ${tool.name} again.`,
  };
}
