import { parseArgs } from 'node:util';
import { CountersignError } from '../core/errors/countersign-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { commands, usage } from './commands.ts';
import { CliContext } from './context.ts';
import type { Output } from './output.ts';

const options = {
  json: { type: 'boolean' },
  user: { type: 'string' },
  as: { type: 'string' },
  reason: { type: 'string' },
  agent: { type: 'string' },
  session: { type: 'string' },
  status: { type: 'string' },
  tool: { type: 'string' },
  result: { type: 'string' },
  succeeded: { type: 'boolean' },
  failed: { type: 'boolean' },
  verify: { type: 'boolean' },
  out: { type: 'string' },
  'trust-unsigned': { type: 'boolean' },
  always: { type: 'boolean' },
  'always-with-args': { type: 'boolean' },
  run: { type: 'string' },
  from: { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  chat: { type: 'boolean' },
  queue: { type: 'boolean' },
  concurrency: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type CliValues = ReturnType<
  typeof parseArgs<{ options: typeof options; allowPositionals: true }>
>['values'];

async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const out: Output = {
    json,
    print: (text) => process.stdout.write(`${text}\n`),
    data: (value) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`),
  };
  const context = new CliContext();
  try {
    let parsed: ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>;
    try {
      parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    } catch (error) {
      throw new InvalidInputError((error as Error).message, { hint: 'Run `countersign --help` for usage.' });
    }
    const [name, ...rest] = parsed.positionals;
    if (!name || parsed.values.help) {
      out.print(usage);
      return 0;
    }
    const command = commands[name];
    if (!command)
      throw new InvalidInputError(`Unknown command "${name}".`, {
        hint: 'Run `countersign --help` for the list.',
      });
    return (await command({ args: rest, values: parsed.values, context, out })) ?? 0;
  } catch (error) {
    return reportError(error, json);
  } finally {
    await context.close().catch(() => undefined);
  }
}

function reportError(error: unknown, json: boolean): number {
  const known = CountersignError.is(error);
  const code = known ? error.code : 'INTERNAL';
  const message = error instanceof Error ? error.message : String(error);
  if (json) process.stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
  else process.stderr.write(`error ${code}: ${message}\n`);
  if (!known && process.env.COUNTERSIGN_DEBUG) process.stderr.write(`${(error as Error).stack}\n`);
  return known ? 1 : 70;
}

// `countersign pending | head` closes our stdout early; that is the reader's choice, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

process.exitCode = await main(process.argv.slice(2));
