import { describe, expect, it } from 'vitest';
import { again } from './paging.ts';
import { parseCommandLine } from './parse-command-line.ts';

/** The words of a line `again` printed, as a POSIX shell splits them (plain and '…' words only). */
function words(line: string): string[] {
  return [...line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((match) =>
    match[1] !== undefined ? match[1].replace(/'\\''/g, "'") : (match[2] as string),
  );
}

describe("the next page's command", () => {
  it('reads back as the same filters, even a value that starts with dashes', () => {
    for (const text of ['--force', '-x', 'refund', "it's", ' spaced ']) {
      const line = again('pending', { text, limit: '5' }, ['text', 'limit']);
      const parsed = parseCommandLine(words(line));
      expect(parsed).toMatchObject({ kind: 'run', values: { text, limit: '5' } });
    }
  });
});
