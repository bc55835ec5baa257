import { type CommandSpec, commands, type OptionName, options } from './command-table.ts';

/** `countersign approve REQUEST [--as NAME] … [--json]`: every argument and option. */
export function usageLine(command: CommandSpec): string {
  const parts = [`countersign ${command.name}`];
  for (const arg of command.args) {
    const word = arg.rest ? `${arg.name}…` : arg.name;
    parts.push(arg.required ? word : `[${word}]`);
  }
  const grouped = new Set<OptionName>();
  for (const name of command.options) {
    if (grouped.has(name)) continue;
    const exactlyOne = command.oneOf?.find((group) => group.includes(name));
    const atMostOne = command.atMostOne?.find((group) => group.includes(name));
    const group = exactlyOne ?? atMostOne;
    if (group) {
      for (const member of group) grouped.add(member);
      const inner = group.map(optionWord).join(' | ');
      parts.push(exactlyOne ? `(${inner})` : `[${inner}]`);
    } else {
      parts.push(command.required?.includes(name) ? optionWord(name) : `[${optionWord(name)}]`);
    }
  }
  if (!command.noJson) parts.push('[--json]');
  return parts.join(' ');
}

function optionWord(name: OptionName): string {
  const spec = options[name];
  return 'value' in spec ? `--${name} ${spec.value}` : `--${name}`;
}

/** The help of one command: `countersign approve --help`, `countersign help approve`. */
export function commandHelp(command: CommandSpec): string {
  const lines = [`Usage: ${usageLine(command)}`, '', `${capitalize(command.summary)}.`];
  for (const paragraph of command.details ?? []) lines.push('', ...wrap(paragraph, 92));
  const listed: OptionName[] = [...command.options, ...(command.noJson ? [] : (['json'] as const)), 'help'];
  const words = listed.map((name) => (name === 'help' ? '-h, --help' : optionWord(name)));
  const width = Math.max(...words.map((word) => word.length)) + 2;
  lines.push('', 'Options:');
  listed.forEach((name, i) => {
    lines.push(`  ${words[i]!.padEnd(width)}${command.optionHelp?.[name] ?? options[name].help}`);
  });
  const related = commands.filter(
    (other) => other !== command && other.name.split(' ')[0] === command.name.split(' ')[0],
  );
  if (related.length) {
    lines.push('', 'See also:');
    for (const other of related) lines.push(`  ${usageLine(other)}`);
  }
  lines.push('', 'Examples:', ...command.examples.map((example) => `  ${example}`));
  return lines.join('\n');
}

const groups = ['Agents and decisions', 'Records', 'Workflows', 'Running'] as const;

/** `countersign`, `countersign --help`, `countersign help`. */
export function overviewHelp(): string {
  const lines = [
    'countersign — tool calls that wait for a person and then run exactly as approved, once',
    '',
    'Usage: countersign COMMAND [ARGUMENTS] [OPTIONS]',
    '       countersign help COMMAND      (the same as: countersign COMMAND --help)',
  ];
  const heads = commands.map((command) =>
    [command.name, ...command.args.map((arg) => (arg.required ? arg.name : `[${arg.name}]`))].join(' '),
  );
  const width = Math.max(...heads.map((head) => head.length)) + 2;
  for (const group of groups) {
    lines.push('', `${group}:`);
    commands.forEach((command, i) => {
      if (command.group === group) lines.push(`  ${heads[i]!.padEnd(width)}${command.summary}`);
    });
  }
  lines.push(
    '',
    'Every command takes --json (except serve and the chat console) and -h/--help; --version prints the version.',
    '',
    'Environment:',
    '  COUNTERSIGN_STORE         sqlite:PATH (default ./.countersign/countersign.db) | memory: |',
    '                            postgres://USER@HOST:PORT/DB[?schema=NAME] | file:DIR (workflow runs only)',
    '  COUNTERSIGN_APP           bookstore | kitchen | the path of a module exporting `agents`',
    '  COUNTERSIGN_MODEL         demo | openai-compatible:MODEL | openai:MODEL | anthropic:MODEL',
    '  COUNTERSIGN_APPROVAL_TTL  how long a request waits, e.g. 15m or 24h (default 24h)',
    '  COUNTERSIGN_APPROVER      the name CLI decisions are recorded under (default $USER; --as overrides)',
    '  COUNTERSIGN_RETENTION     what purge (and serve, hourly) removes, e.g. sessions=90d,runs=30d,audit=7y',
    '  PORT                      the port serve listens on (default 8787; --port overrides)',
    '',
    'More: docs/cli.md, docs/configuration.md.',
  );
  return lines.join('\n');
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}
