import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Runs a `.ts` fixture next to this file in a separate Node process, which strips the types
 * itself; resolves with stdout, rejects with stderr when the process fails.
 */
export function runFixture(name: string, args: readonly string[]): Promise<string> {
  const script = fileURLToPath(new URL(name, import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [script, ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${name} failed: ${stderr || error.message}`));
      else resolve(stdout);
    });
  });
}
