import { type ParseArgsConfig, parseArgs } from 'node:util';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { closestMatch } from './closest-match.ts';
import {
  type CliValues,
  type CommandSpec,
  commands,
  findCommand,
  groupWords,
  type OptionName,
  options,
} from './command-table.ts';
import { usageLine } from './help-text.ts';

export type CommandLine =
  | { kind: 'run'; command: CommandSpec; args: string[]; values: CliValues }
  | { kind: 'help'; command?: CommandSpec }
  | { kind: 'version' };

const everyOption: NonNullable<ParseArgsConfig['options']> = {
  ...Object.fromEntries(Object.entries(options).map(([name, spec]) => [name, { type: spec.type }])),
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
};

/**
 * Reads argv against the command table. Node's parseArgs splits the words (non-strict, so
 * nothing it says reaches a person); every check and message is ours, and names the fix.
 */
export function parseCommandLine(argv: readonly string[]): CommandLine {
  const { tokens } = parseArgs({
    args: [...argv],
    options: everyOption,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const positionals = tokens.filter((token) => token.kind === 'positional').map((token) => token.value);
  const flags = tokens.filter((token) => token.kind === 'option');
  const has = (name: string) => flags.some((flag) => flag.name === name);

  let words = positionals;
  let helpWanted = has('help');
  if (words[0] === 'help') {
    helpWanted = true;
    words = words.slice(1);
  }
  if (words.length === 0) {
    if (has('version') && !helpWanted) return { kind: 'version' };
    return { kind: 'help' };
  }
  const command = resolveCommand(words);
  if (helpWanted) return { kind: 'help', command };
  const args = words.slice(command.name.split(' ').length);

  const allowed = new Set<string>([...command.options, 'json', 'help']);
  const values: Record<string, string | boolean> = {};
  for (const flag of flags) {
    if (!allowed.has(flag.name)) throw unknownOption(flag.rawName, flag.name, command);
    const spec = options[flag.name as OptionName];
    if (spec.type === 'boolean') {
      if (flag.value !== undefined)
        throw new InvalidInputError(`${flag.rawName} takes no value, but was given "${flag.value}".`, {
          hint: `Write ${flag.rawName} alone. Usage: ${usageLine(command)}`,
        });
      values[flag.name] = true;
      continue;
    }
    const placeholder = 'value' in spec ? spec.value : 'VALUE';
    if (flag.value === undefined || (!flag.inlineValue && flag.value.startsWith('--')))
      throw new InvalidInputError(`${flag.rawName} needs a value: ${flag.rawName} ${placeholder}.`, {
        hint: `Give it after the option (a value that starts with "--" goes as ${flag.rawName}=VALUE). Usage: ${usageLine(command)}`,
      });
    values[flag.name] = flag.value;
  }
  if (values.json && command.noJson)
    throw new InvalidInputError(`countersign ${command.name} has no --json output.`, {
      hint: command.noJson,
    });
  checkArgs(command, args);
  return { kind: 'run', command, args, values: values as CliValues };
}

function resolveCommand(words: readonly string[]): CommandSpec {
  const [first, second] = words as [string, string | undefined];
  if (groupWords.has(first) && second !== undefined) {
    const pair = findCommand(`${first} ${second}`);
    if (pair) return pair;
  }
  const single = findCommand(first);
  if (single) return single;
  if (groupWords.has(first)) {
    const actions = commands.filter((c) => c.name.startsWith(`${first} `)).map((c) => c.name.split(' ')[1]!);
    const guess = second === undefined ? undefined : closestMatch(second, actions);
    throw new InvalidInputError(
      second === undefined
        ? `countersign ${first} needs one of: ${actions.join(', ')}.`
        : `Unknown command "${first} ${second}".${guess ? ` Did you mean "${first} ${guess}"?` : ''}`,
      { hint: `Run \`countersign help ${first} ${guess ?? actions[0]}\` for its usage.` },
    );
  }
  const names = new Set(commands.map((c) => c.name.split(' ')[0]!));
  const guess = closestMatch(first, names);
  throw new InvalidInputError(`Unknown command "${first}".${guess ? ` Did you mean "${guess}"?` : ''}`, {
    hint: guess
      ? `Run \`countersign ${guess} --help\` for its usage, or \`countersign --help\` for every command.`
      : 'Run `countersign --help` for the list of commands.',
  });
}

function unknownOption(rawName: string, name: string, command: CommandSpec): InvalidInputError {
  const own = [...command.options, 'json', 'help'];
  const guess = rawName.startsWith('--') ? closestMatch(name, own) : undefined;
  const elsewhere = name in options;
  const what = elsewhere
    ? `countersign ${command.name} has no option ${rawName}.`
    : `Unknown option ${rawName} for countersign ${command.name}.`;
  return new InvalidInputError(`${what}${guess ? ` Did you mean --${guess}?` : ''}`, {
    hint: `Usage: ${usageLine(command)} (more: countersign ${command.name} --help)`,
  });
}

function checkArgs(command: CommandSpec, args: readonly string[]): void {
  const takesRest = command.args.some((arg) => arg.rest);
  const missing = command.args.filter((arg) => arg.required).slice(args.length);
  if (missing[0]) {
    throw new InvalidInputError(
      `countersign ${command.name} needs ${missing.map((arg) => arg.name).join(' and ')}.`,
      {
        hint: `Usage: ${usageLine(command)}`,
      },
    );
  }
  if (!takesRest && args.length > command.args.length) {
    const extra = args.slice(command.args.length);
    const takes =
      command.args.length === 0
        ? 'takes no arguments'
        : `takes ${command.args.map((arg) => arg.name).join(' ')} only`;
    throw new InvalidInputError(
      `Unexpected argument${extra.length > 1 ? 's' : ''} ${extra.map((word) => `"${word}"`).join(' ')}: countersign ${command.name} ${takes}.`,
      {
        hint: `${filterHint(command, extra[0]!)}Usage: ${usageLine(command)}`,
      },
    );
  }
}

/** `pending s1` most likely meant `pending --session s1`. */
function filterHint(command: CommandSpec, word: string): string {
  if (command.options.includes('session') && command.args.length === 0)
    return `To filter by session: countersign ${command.name} --session ${word}. `;
  return '';
}
