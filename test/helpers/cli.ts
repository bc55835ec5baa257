import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const binPath = resolve(import.meta.dirname, '../../bin/countersign.js');

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (commands run with --json). */
  json: unknown;
}

/**
 * Runs the real `countersign` binary in a child process. Asynchronous on purpose: the
 * scripted model server lives in the test process and must keep answering meanwhile.
 */
export function runCli(args: string[], env: Record<string, string>, stdin?: string): Promise<CliRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [binPath, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolvePromise({ code, signal, stdout, stderr, json });
    });
    child.stdin.end(stdin ?? '');
  });
}

export function tempStore(name = 'countersign.db'): string {
  return `sqlite:${join(mkdtempSync(join(tmpdir(), 'countersign-test-')), name)}`;
}
