import { describe, expect, it } from 'vitest';
import { closestMatch } from './closest-match.ts';
import { commands } from './command-table.ts';
import { usageLine } from './help-text.ts';
import { parseCommandLine } from './parse-command-line.ts';
import { checkServedApp } from './serve-command-line.ts';

function refusal(argv: string[]): { code: string; message: string } {
  try {
    parseCommandLine(argv);
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error(`${argv.join(' ')} was accepted`);
}

describe('parseCommandLine', () => {
  it('finds one- and two-word commands with their arguments and options', () => {
    expect(parseCommandLine(['approve', 'apr_1', '--as', 'alice', '--always'])).toMatchObject({
      kind: 'run',
      command: { name: 'approve' },
      args: ['apr_1'],
      values: { as: 'alice', always: true },
    });
    expect(parseCommandLine(['rules', 'revoke', 'rule_1', '--as=bob'])).toMatchObject({
      command: { name: 'rules revoke' },
      args: ['rule_1'],
      values: { as: 'bob' },
    });
    expect(parseCommandLine(['rules', 's1'])).toMatchObject({ command: { name: 'rules' }, args: ['s1'] });
    expect(parseCommandLine(['chat', 's1', 'cancel', 'my', 'order', '--user', 'c-1'])).toMatchObject({
      args: ['s1', 'cancel', 'my', 'order'],
      values: { user: 'c-1' },
    });
    expect(parseCommandLine(['--json', 'pending'])).toMatchObject({ command: { name: 'pending' } });
  });

  it('help for a command however it is asked; the overview without one; --version', () => {
    for (const argv of [
      ['approve', '--help'],
      ['approve', '-h'],
      ['help', 'approve'],
      ['approve', 'x', '--help'],
    ])
      expect(parseCommandLine(argv)).toMatchObject({ kind: 'help', command: { name: 'approve' } });
    expect(parseCommandLine(['help', 'run', 'respond'])).toMatchObject({ command: { name: 'run respond' } });
    expect(parseCommandLine([])).toEqual({ kind: 'help' });
    expect(parseCommandLine(['--help'])).toEqual({ kind: 'help' });
    expect(parseCommandLine(['--version'])).toEqual({ kind: 'version' });
    expect(refusal(['help', 'aprove']).message).toContain('Did you mean "approve"?');
  });

  it('an unknown option says so in our words, with the closest option and the usage', () => {
    const error = refusal(['pending', '--sesion', 's1']);
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toBe(
      'Unknown option --sesion for countersign pending. Did you mean --session? Usage: countersign pending [--session S] [--tool T] [--customer C] [--text TEXT] [--limit N] [--after CURSOR] [--json] (more: countersign pending --help)',
    );
    expect(refusal(['approve', 'x', '--args', '{}']).message).toContain('Unknown option --args');
    expect(refusal(['pending', '--reason', 'x']).message).toContain(
      'countersign pending has no option --reason.',
    );
    expect(refusal(['pending', '-x']).message).toContain('Unknown option -x');
  });

  it('a missing value, a value on a flag and a value that is really the next option are refused', () => {
    expect(refusal(['approve', 'x', '--as']).message).toContain('--as needs a value: --as NAME.');
    expect(refusal(['approve', 'x', '--as', '--json']).message).toContain('--as needs a value');
    expect(parseCommandLine(['approve', 'x', '--reason=--dashes are fine here'])).toMatchObject({
      values: { reason: '--dashes are fine here' },
    });
    expect(refusal(['pending', '--json=1']).message).toContain('--json takes no value');
  });

  it('missing and extra positionals are refused with the complete usage line', () => {
    expect(refusal(['approve']).message).toBe(
      'countersign approve needs REQUEST. Usage: countersign approve REQUEST [--as NAME] [--reason TEXT] [--edit JSON] [--always | --always-with-args] [--queue] [--json]',
    );
    expect(refusal(['run', 'respond', 'r1']).message).toContain('needs REQUEST and JSON');
    const extra = refusal(['pending', 's1']);
    expect(extra.message).toContain('Unexpected argument "s1": countersign pending takes no arguments.');
    expect(extra.message).toContain('countersign pending --session s1');
    expect(refusal(['show', 'a', 'b']).message).toContain('countersign show takes REQUEST only');
  });

  it('typos in command names are corrected; an unknown word with nothing close lists nothing', () => {
    expect(refusal(['pendng']).message).toBe(
      'Unknown command "pendng". Did you mean "pending"? Run `countersign pending --help` for its usage, or `countersign --help` for every command.',
    );
    expect(refusal(['frobnicate']).message).toBe(
      'Unknown command "frobnicate". Run `countersign --help` for the list of commands.',
    );
    expect(refusal(['run', 'strat', 'x']).message).toContain('Did you mean "run start"?');
    expect(refusal(['session']).message).toContain('countersign session needs one of: export, import.');
  });

  it('commands that print only for people refuse --json', () => {
    expect(refusal(['serve', '--json']).message).toContain('countersign serve has no --json output.');
  });

  it('every command has a usage line naming each of its options, and examples that parse', () => {
    for (const command of commands) {
      for (const option of command.options) expect(usageLine(command)).toContain(`--${option}`);
      for (const example of command.examples) {
        const words = (example.replace(/^([A-Z_]+=\S+ )+/, '').match(/'[^']*'|"[^"]*"|\S+/g) ?? []).map((w) =>
          w.replace(/^(['"])(.*)\1$/, '$2'),
        );
        expect(words[0], example).toBe('countersign');
        expect(parseCommandLine(words.slice(1)), example).toMatchObject({ command: { name: command.name } });
      }
    }
  });
});

describe('closestMatch', () => {
  it('corrects one or two slips, swaps included, and stays quiet when nothing is close', () => {
    expect(closestMatch('sesion', ['session', 'status'])).toBe('session');
    expect(closestMatch('aprove', ['approve', 'reject'])).toBe('approve');
    expect(closestMatch('exeuctions', ['executions', 'expire'])).toBe('executions');
    expect(closestMatch('zzz', ['approve', 'reject'])).toBeUndefined();
    expect(closestMatch('conc', ['concurrency', 'chat'])).toBe('concurrency');
  });
});

describe('checkServedApp', () => {
  it('an installed package serves only the app it is told to; a checkout keeps the demo', () => {
    expect(() => checkServedApp({ app: undefined, demo: false, installed: true })).toThrow(
      /COUNTERSIGN_APP is not set/,
    );
    expect(() => checkServedApp({ app: '  ', demo: false, installed: true })).toThrow(
      /CONFIG|COUNTERSIGN_APP/,
    );
    expect(() => checkServedApp({ app: undefined, demo: true, installed: true })).not.toThrow();
    expect(() => checkServedApp({ app: './my-app.js', demo: false, installed: true })).not.toThrow();
    expect(() => checkServedApp({ app: undefined, demo: false, installed: false })).not.toThrow();
    expect(() => checkServedApp({ app: 'kitchen', demo: true, installed: false })).toThrow(/--demo/);
  });
});
