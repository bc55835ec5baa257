import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CountersignError } from '../core/errors/countersign-error.ts';
import { describeModel, resolveModel } from './resolve-model.ts';

const run = promisify(execFile);
const modulePath = fileURLToPath(new URL('./resolve-model.ts', import.meta.url));

async function configError(promise: Promise<unknown>): Promise<CountersignError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!CountersignError.is(error)) throw new Error(`expected a CountersignError, got ${String(error)}`);
  expect(error.code).toBe('CONFIG_ERROR');
  return error;
}

describe('resolveModel', () => {
  it('resolves the demo model by default and describes it', async () => {
    const model = await resolveModel('demo', {});
    expect([model.provider, model.modelId]).toEqual(['countersign', 'demo']);
    expect(describeModel(model)).toBe('demo (offline, deterministic; not a real language model)');
    expect(describeModel(await resolveModel('  ', {}))).toBe(describeModel(model));
  });

  it('builds an openai-compatible chat model, keeping colons in the model id', async () => {
    const model = await resolveModel('openai-compatible:qwen3:4b', {
      OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1',
    });
    expect(model.specificationVersion).toBe('v4');
    expect(model.modelId).toBe('qwen3:4b');
    expect(describeModel(model)).toBe('openai-compatible:qwen3:4b');
  });

  it('builds openai and anthropic models when their keys are set', async () => {
    const openai = await resolveModel('openai:gpt-5-mini', { OPENAI_API_KEY: 'sk-test' });
    expect(describeModel(openai)).toBe('openai:gpt-5-mini');
    const anthropic = await resolveModel('anthropic:claude-sonnet-4-5', { ANTHROPIC_API_KEY: 'sk-ant-test' });
    expect(describeModel(anthropic)).toBe('anthropic:claude-sonnet-4-5');
  });

  it('asks for OPENAI_BASE_URL for openai-compatible models', async () => {
    const error = await configError(resolveModel('openai-compatible:qwen3:4b', {}));
    expect(error.message).toContain('OPENAI_BASE_URL');
    expect(error.message).toContain('http://127.0.0.1:11434/v1');
  });

  it('asks for the API key of hosted providers', async () => {
    expect((await configError(resolveModel('openai:gpt-5-mini', {}))).message).toContain('OPENAI_API_KEY');
    expect((await configError(resolveModel('anthropic:claude-sonnet-4-5', {}))).message).toContain(
      'ANTHROPIC_API_KEY',
    );
  });

  it('lists the accepted forms for an unknown or incomplete spec', async () => {
    for (const spec of ['gpt-5', 'ollama:qwen3', 'openai', 'openai-compatible:']) {
      const error = await configError(
        resolveModel(spec, { OPENAI_BASE_URL: 'http://x/v1', OPENAI_API_KEY: 'k' }),
      );
      expect(error.message).toContain('openai-compatible:MODEL');
      expect(error.message).toContain('anthropic:MODEL');
    }
  });
});

describe('resolveModel loads providers lazily', () => {
  it('has no static import of a provider package', async () => {
    const source = await readFile(modulePath, 'utf8');
    expect(source).not.toMatch(/^\s*import\s[^;]*from\s+['"]@ai-sdk\/(?!provider['"])/m);
  });

  /** Which @ai-sdk packages a fresh process resolves while resolving `spec`. */
  async function providerImports(spec: string): Promise<string[]> {
    const script = `
      import { registerHooks } from 'node:module';
      const seen = [];
      registerHooks({ resolve(specifier, context, next) { seen.push(specifier); return next(specifier, context); } });
      const { resolveModel } = await import(process.argv[1]);
      await resolveModel(process.argv[2], { OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' });
      console.log(JSON.stringify([...new Set(seen.filter((s) => s.startsWith('@ai-sdk/')))]));
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script, modulePath, spec]);
    return JSON.parse(stdout) as string[];
  }

  it('does not load @ai-sdk/openai-compatible for the demo model, but does when chosen', async () => {
    expect(await providerImports('demo')).toEqual([]);
    expect(await providerImports('openai-compatible:scripted')).toContain('@ai-sdk/openai-compatible');
  });
});
