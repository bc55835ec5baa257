import { type ChildProcess, spawn } from 'node:child_process';
import { binPath } from './cli.ts';
import { type Elsewhere, elsewhere } from './other-host.ts';

export interface WorkerLine {
  at: string;
  event: string;
  session?: string;
  status?: string;
  [key: string]: unknown;
}

/**
 * A `countersign worker --json` child process and the JSON lines it has printed; without
 * `--json` (`text`), each line it printed is `{ event: 'text', text }`.
 */
export interface WorkerProcess {
  child: ChildProcess;
  lines: WorkerLine[];
  stderr: () => string;
  /** Resolves with the first line matching, or rejects after `timeoutMs`. */
  waitFor(match: (line: WorkerLine) => boolean, timeoutMs?: number): Promise<WorkerLine>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  stop(): Promise<void>;
}

/**
 * `where`: run it as on another host (other-host.ts); it then exits 137, not by signal, when
 * killed. `output: 'text'`: without `--json`, as a person runs it.
 */
export function startWorker(
  env: Record<string, string>,
  args: string[] = [],
  where?: Elsewhere,
  output: 'json' | 'text' = 'json',
): WorkerProcess {
  const argv = [process.execPath, binPath, 'worker', ...(output === 'json' ? ['--json'] : []), ...args];
  const [command, commandArgs] = where === undefined ? [argv[0]!, argv.slice(1)] : elsewhere(where, argv);
  const child = spawn(command, commandArgs, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: WorkerLine[] = [];
  const waiters = new Set<() => void>();
  let buffer = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let newline = buffer.indexOf('\n');
    while (newline !== -1) {
      const text = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (text) {
        try {
          lines.push(JSON.parse(text) as WorkerLine);
        } catch {
          lines.push({ at: new Date().toISOString(), event: 'text', text });
        }
      }
      newline = buffer.indexOf('\n');
    }
    for (const wake of waiters) wake();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>(
    (resolve) => {
      child.on('exit', (code, signal) => {
        resolve({ code, signal, at: Date.now() });
        for (const wake of waiters) wake();
      });
    },
  );
  return {
    child,
    lines,
    stderr: () => err,
    exited,
    waitFor(match, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(match);
          if (found) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `worker ${child.pid}: no matching line in ${timeoutMs} ms.\n${JSON.stringify(lines)}\n${err}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async stop() {
      // unshare ignores SIGTERM while it waits for the namespace's shell: killing it takes the
      // namespace down (--kill-child), the worker in it included.
      if (child.exitCode === null && child.signalCode === null) child.kill(where ? 'SIGKILL' : 'SIGTERM');
      await exited;
    },
  };
}
