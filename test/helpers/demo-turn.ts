import type { Message } from '../../src/core/messages.ts';
import { createDemoModel } from '../../src/model/demo-model.ts';
import { fromModelResult, type ModelTurn } from '../../src/model/from-model-result.ts';
import { toModelPrompt } from '../../src/model/to-model-prompt.ts';
import { type ModelToolSpec, toModelTools } from '../../src/model/to-model-tools.ts';

/** One demo-model step over countersign messages, as the agent would take it. */
export async function demoTurn(messages: Message[], tools: ModelToolSpec[]): Promise<ModelTurn> {
  const result = await createDemoModel().doGenerate({
    prompt: toModelPrompt('You are a support agent.', messages),
    tools: toModelTools(tools),
  });
  return fromModelResult(result);
}
