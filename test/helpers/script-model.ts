import type { LanguageModelV4, LanguageModelV4Content } from '@ai-sdk/provider';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

export type Step = Array<{ tool: string; args: unknown } | string>;

/**
 * A model that plays a fixed script, one response per call; after the script it answers
 * "done". `calls` counts how often it was asked.
 */
export function scriptModel(steps: Step[]): LanguageModelV4 & { calls: number } {
  let n = 0;
  const model = {
    specificationVersion: 'v4' as const,
    provider: 'test',
    modelId: 'script',
    supportedUrls: {},
    calls: 0,
    async doGenerate() {
      model.calls += 1;
      const step = steps[model.calls - 1] ?? ['done'];
      const content: LanguageModelV4Content[] = step.map((part) =>
        typeof part === 'string'
          ? { type: 'text', text: part }
          : {
              type: 'tool-call',
              toolCallId: `call-${++n}`,
              toolName: part.tool,
              input: JSON.stringify(part.args),
            },
      );
      const hasCalls = content.some((part) => part.type === 'tool-call');
      return {
        content,
        finishReason: { unified: hasCalls ? ('tool-calls' as const) : ('stop' as const), raw: undefined },
        usage,
        warnings: [],
      };
    },
    async doStream(): Promise<never> {
      throw new Error('scriptModel does not stream');
    },
  };
  return model;
}
