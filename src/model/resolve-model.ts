import { ConfigError } from '../core/errors/config-error.ts';
import { createDemoModel, DEMO_MODEL_ID, DEMO_PROVIDER } from './demo-model.ts';
import type { AnyLanguageModel } from './language-model.ts';

type Env = Readonly<Record<string, string | undefined>>;

const acceptedForms =
  'demo, openai-compatible:MODEL (with OPENAI_BASE_URL), openai:MODEL (with OPENAI_API_KEY) or anthropic:MODEL (with ANTHROPIC_API_KEY)';

/**
 * The model named by a spec such as "demo" or "openai-compatible:qwen3:4b". Provider
 * packages are imported only when chosen, so commands that never call a model start fast.
 */
export async function resolveModel(
  spec: string = process.env.COUNTERSIGN_MODEL ?? 'demo',
  env: Env = process.env,
): Promise<AnyLanguageModel> {
  const trimmed = spec.trim() || 'demo';
  if (trimmed === 'demo') return createDemoModel();
  const colon = trimmed.indexOf(':');
  const provider = colon < 0 ? trimmed : trimmed.slice(0, colon);
  // Model ids may hold colons themselves (Ollama's "qwen3:4b"), so only the first one splits.
  const modelId = colon < 0 ? '' : trimmed.slice(colon + 1).trim();
  switch (provider) {
    case 'openai-compatible':
      return openAICompatible(requireModelId(trimmed, modelId), env);
    case 'openai':
      return openAI(requireModelId(trimmed, modelId), env);
    case 'anthropic':
      return anthropic(requireModelId(trimmed, modelId), env);
    default:
      throw new ConfigError(`Unknown model "${trimmed}".`, {
        hint: `Set COUNTERSIGN_MODEL to one of: ${acceptedForms}.`,
      });
  }
}

/** How a model is named to people, e.g. in the console chat's banner. */
export function describeModel(model: AnyLanguageModel): string {
  if (model.provider === DEMO_PROVIDER && model.modelId === DEMO_MODEL_ID) {
    return 'demo (offline, deterministic; not a real language model)';
  }
  // Providers report "openai.responses", "anthropic.messages", "openai-compatible.chat".
  const provider = model.provider.split('.')[0] ?? model.provider;
  return `${provider}:${model.modelId}`;
}

function requireModelId(spec: string, modelId: string): string {
  if (modelId) return modelId;
  throw new ConfigError(`The model spec "${spec}" names no model.`, {
    hint: `Add the model after the colon, e.g. "${spec.replace(/:?$/, ':MODEL')}". Accepted forms: ${acceptedForms}.`,
  });
}

async function openAICompatible(modelId: string, env: Env): Promise<AnyLanguageModel> {
  const baseURL = env.OPENAI_BASE_URL?.trim();
  if (!baseURL) {
    throw new ConfigError('openai-compatible models need OPENAI_BASE_URL.', {
      hint: "Set it to the server's base URL, e.g. OPENAI_BASE_URL=http://127.0.0.1:11434/v1 for Ollama (OPENAI_API_KEY is optional).",
    });
  }
  const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
  return createOpenAICompatible({ name: 'openai-compatible', baseURL, apiKey: env.OPENAI_API_KEY }).chatModel(
    modelId,
  );
}

async function openAI(modelId: string, env: Env): Promise<AnyLanguageModel> {
  const apiKey = requireKey(env, 'OPENAI_API_KEY', 'openai');
  const { createOpenAI } = await import('@ai-sdk/openai');
  return createOpenAI({ apiKey, baseURL: env.OPENAI_BASE_URL?.trim() || undefined })(modelId);
}

async function anthropic(modelId: string, env: Env): Promise<AnyLanguageModel> {
  const apiKey = requireKey(env, 'ANTHROPIC_API_KEY', 'anthropic');
  const { createAnthropic } = await import('@ai-sdk/anthropic');
  return createAnthropic({ apiKey, baseURL: env.ANTHROPIC_BASE_URL?.trim() || undefined })(modelId);
}

/** Checked here so a missing key fails at start-up, not at the first model call mid-turn. */
function requireKey(env: Env, name: string, provider: string): string {
  const key = env[name]?.trim();
  if (key) return key;
  throw new ConfigError(`${provider} models need ${name}.`, { hint: `Set ${name} in the environment.` });
}
