// Regenerates the marked regions of docs/cli.md from the command table (src/cli/command-table.ts):
// `node scripts/cli-reference.ts` writes them; test/cli/cli-reference.test.ts fails when the
// file and the table disagree.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findCommand } from '../src/cli/command-table.ts';
import { commandHelp, overviewHelp } from '../src/cli/help-text.ts';

export const cliDoc = join(import.meta.dirname, '..', 'docs', 'cli.md');

const region =
  /(<!-- generated from the command table: (.+?) -->\n)[\s\S]*?(<!-- end of generated text -->)/g;

/** docs/cli.md with every region replaced by what `countersign …--help` prints now. */
export function regenerate(markdown: string): string {
  return markdown.replace(region, (_whole, open: string, what: string, close: string) => {
    const text = what === 'overview' ? overviewHelp() : helpOf(what.replace(/^help /, ''));
    return `${open}\`\`\`text\n${text}\n\`\`\`\n${close}`;
  });
}

function helpOf(name: string): string {
  const command = findCommand(name);
  if (!command) throw new Error(`docs/cli.md has a generated region for an unknown command "${name}".`);
  return `$ countersign ${name} --help\n${commandHelp(command)}`;
}

if (import.meta.main) {
  writeFileSync(cliDoc, regenerate(readFileSync(cliDoc, 'utf8')));
  console.log('docs/cli.md: regenerated the command reference.');
}
