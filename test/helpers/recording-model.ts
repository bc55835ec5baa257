import type { LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider';

/** Wraps a model and keeps every prompt it was given, so tests can see what the model read. */
export function recordingModel(
  inner: LanguageModelV4,
): LanguageModelV4 & { calls: LanguageModelV4CallOptions[] } {
  const calls: LanguageModelV4CallOptions[] = [];
  return {
    specificationVersion: 'v4',
    provider: inner.provider,
    modelId: inner.modelId,
    supportedUrls: {},
    calls,
    doGenerate(options) {
      calls.push(structuredClone(options));
      return inner.doGenerate(options);
    },
    doStream(options) {
      return inner.doStream(options);
    },
  };
}

/** All tool-result texts the model has seen across its calls, flattened. */
export function toolResultsSeen(calls: LanguageModelV4CallOptions[]): string[] {
  const last = calls.at(-1);
  if (!last) return [];
  const out: string[] = [];
  for (const message of last.prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type === 'tool-result') out.push(JSON.stringify(part.output));
    }
  }
  return out;
}
