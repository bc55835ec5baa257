import type {
  LanguageModelV3Content,
  LanguageModelV3StreamPart,
  LanguageModelV4Content,
  LanguageModelV4FunctionTool,
  LanguageModelV4StreamPart,
} from '@ai-sdk/provider';
import type { AnyLanguageModel, ModelPrompt } from './language-model.ts';
import { isRetryable, type RetryPolicy, retryDelayMs, StreamCutError } from './retry-policy.ts';

/** What one try streamed before it failed; the caller should drop that text. */
export interface RetryNotice {
  /** The try that failed (1 for the first). */
  attempt: number;
  delayMs: number;
  error: unknown;
  /** Text already passed to onText by the failed try; the next try starts its reply afresh. */
  discardedText: string;
}

/** Per-turn listeners of a chat: text as it is generated, and tries that failed. */
export interface ModelCallHooks {
  onText?: (delta: string) => void;
  onRetry?: (notice: RetryNotice) => void;
}

export interface ModelCallSettings {
  retry: RetryPolicy;
  /** Use doStream even when nobody listens (for models that only stream). */
  stream: boolean;
  hooks?: ModelCallHooks;
}

export interface ModelResponse {
  content: Array<LanguageModelV4Content | LanguageModelV3Content>;
}

/**
 * One model step: generate or stream, tried again on transient failures. Nothing is written
 * here; the caller commits the step only after this returns, so a try cut midway leaves the
 * session as it was before the step.
 */
export async function callModel(
  model: AnyLanguageModel,
  request: { prompt: ModelPrompt; tools: LanguageModelV4FunctionTool[] },
  settings: ModelCallSettings,
): Promise<ModelResponse> {
  const options = { prompt: request.prompt, tools: request.tools, toolChoice: { type: 'auto' as const } };
  const streaming =
    settings.stream || settings.hooks?.onText !== undefined || typeof model.doGenerate !== 'function';
  for (let attempt = 1; ; attempt++) {
    const streamed = { text: '' };
    try {
      if (!streaming) return { content: [...(await model.doGenerate(options)).content] };
      const { stream } = await model.doStream(options);
      return await readStream(stream, settings.hooks?.onText, streamed);
    } catch (error) {
      if (attempt >= settings.retry.maxAttempts || !isRetryable(error)) {
        if (attempt === 1) throw error;
        throw new Error(
          `${error instanceof Error ? error.message : String(error)} (tried ${attempt} times)`,
          {
            cause: error,
          },
        );
      }
      const delayMs = retryDelayMs(settings.retry, attempt, error);
      settings.hooks?.onRetry?.({ attempt, delayMs, error, discardedText: streamed.text });
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

async function readStream(
  stream: ReadableStream<LanguageModelV4StreamPart | LanguageModelV3StreamPart>,
  onText: ((delta: string) => void) | undefined,
  streamed: { text: string },
): Promise<ModelResponse> {
  const content: ModelResponse['content'] = [];
  let finished = false;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value: part } = await reader.read();
      if (done) break;
      if (part.type === 'text-delta') {
        streamed.text += part.delta;
        notify(onText, part.delta);
      } else if (part.type === 'tool-call') {
        content.push(part);
      } else if (part.type === 'error') {
        throw part.error;
      } else if (part.type === 'finish') {
        finished = true;
      }
    }
  } finally {
    reader.releaseLock();
  }
  if (!finished) throw new StreamCutError('The model stream ended before the reply was complete.');
  // Text first, then calls: the order fromModelResult and the stored message use anyway.
  return { content: streamed.text ? [{ type: 'text', text: streamed.text }, ...content] : content };
}

/** A listener that throws (a closed browser tab, say) must not fail the turn it listens to. */
function notify(onText: ((delta: string) => void) | undefined, delta: string): void {
  try {
    onText?.(delta);
  } catch {
    // The text is still stored with the step; only this listener misses it.
  }
}
