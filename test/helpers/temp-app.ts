import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * Writes an application module (COUNTERSIGN_APP) to a temporary directory: `body` follows an
 * import of `createAgent` and `defineTool` from this checkout's source. The directory has no
 * node_modules, so tools in it use plain JSON Schema, not zod. Returns the module's path.
 */
export function writeTempApp(name: string, body: string): string {
  const dir = mkdtempSync(join(tmpdir(), `countersign-${name}-`));
  const index = resolve(import.meta.dirname, '../../src/index.ts');
  const app = join(dir, `${name}.ts`);
  writeFileSync(app, `import { createAgent, defineTool } from ${JSON.stringify(index)};\n${body}`);
  return app;
}
