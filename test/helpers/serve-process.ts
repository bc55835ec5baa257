import { type ChildProcess, spawn } from 'node:child_process';
import { binPath } from './cli.ts';

export interface ServeProcess {
  base: string;
  child: ChildProcess;
  /** All it printed to stdout so far, the banner included. */
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
}

/** `countersign serve --port 0` as a child process; resolves once it prints its banner. */
export async function startServe(env: Record<string, string>): Promise<ServeProcess> {
  const child = spawn(process.execPath, [binPath, 'serve', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (chunk) => {
    err += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const match = /Inbox: (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (match && out.includes('Press Ctrl+C')) resolve(match[1]!);
    });
    void exited.then(({ code }) => reject(new Error(`serve exited ${code}: ${out}\n${err}`)));
  });
  return {
    base,
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
