import { readFileSync } from 'node:fs';
import { CountersignError } from '../core/errors/countersign-error.ts';
import { CliContext } from './context.ts';
import { commandHelp, overviewHelp } from './help-text.ts';
import type { Output } from './output.ts';
import { parseCommandLine } from './parse-command-line.ts';

/**
 * The entry of `countersign`. It loads the command table and the parser only: each command's
 * code, and what it needs (store, app, model, server), is imported when that command runs.
 */
async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const out: Output = {
    json,
    print: (text) => process.stdout.write(`${text}\n`),
    data: (value) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`),
  };
  const context = new CliContext();
  try {
    const line = parseCommandLine(argv);
    if (line.kind === 'version') {
      out.print(version());
      return 0;
    }
    if (line.kind === 'help') {
      out.print(line.command ? commandHelp(line.command) : overviewHelp());
      return 0;
    }
    const run = await line.command.load();
    return (await run({ args: line.args, values: line.values, context, out })) ?? 0;
  } catch (error) {
    return reportError(error, json);
  } finally {
    await context.close().catch(() => undefined);
  }
}

function version(): string {
  // src/cli/main.ts in a checkout, dist/src/cli/main.js in a package: package.json is above either.
  const up = import.meta.url.endsWith('.ts') ? '../../package.json' : '../../../package.json';
  return (JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { version: string }).version;
}

function reportError(error: unknown, json: boolean): number {
  const known = CountersignError.is(error);
  const code = known ? error.code : 'INTERNAL';
  const debug = Boolean(process.env.COUNTERSIGN_DEBUG);
  const text = error instanceof Error ? error.message : String(error);
  const message = known
    ? error.message
    : `${text.replace(/\.$/, '')}. ${debug ? 'The stack follows' : 'Run again with COUNTERSIGN_DEBUG=1 for the stack'}: if it points into countersign, please report it.`;
  if (json) process.stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
  else process.stderr.write(`error ${code}: ${message}\n`);
  if (!known && debug) process.stderr.write(`${(error as Error).stack}\n`);
  return known ? 1 : 70;
}

// `countersign pending | head` closes our stdout early; that is the reader's choice, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

process.exitCode = await main(process.argv.slice(2));
