import type { Tool } from './define-tool.ts';

export type ArgsCheck = { ok: true; args: unknown } | { ok: false; error: string };

/**
 * Invalid arguments are the model's mistake to fix, so they become a readable tool error,
 * never an exception and never a question to a person.
 */
export function validateArgs(tool: Tool, args: unknown): ArgsCheck {
  const parsed = tool.inputSchema.safeParse(args);
  if (parsed.success) return { ok: true, args: parsed.data };
  const problems = parsed.error.issues
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(arguments)'}: ${issue.message}`)
    .join('; ');
  return {
    ok: false,
    error: `Invalid arguments for ${tool.name}: ${problems}. Nothing was run. Fix the arguments and call ${tool.name} again.`,
  };
}
