import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cliDoc, regenerate } from '../../scripts/cli-reference.ts';
import { commands } from '../../src/cli/command-table.ts';

describe('docs/cli.md', () => {
  const markdown = readFileSync(cliDoc, 'utf8');

  it('shows the help the command table prints today (run `node scripts/cli-reference.ts` to update)', () => {
    expect(regenerate(markdown)).toBe(markdown);
  });

  it('has the help of every command', () => {
    for (const command of commands)
      expect(markdown, command.name).toContain(
        `<!-- generated from the command table: help ${command.name} -->`,
      );
  });
});
