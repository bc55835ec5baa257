import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { MAX_PAGE_LIMIT } from '../store/request-page.ts';
import type { CliValues, OptionName } from './command-table.ts';
import type { Output } from './output.ts';

/** The page size of the listing commands without --limit: a screenful. */
export const CLI_PAGE = 50;

export function wholeOption(
  text: string | undefined,
  name: string,
  fallback: number,
  command: string,
): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < 1 || value > MAX_PAGE_LIMIT)
    throw new InvalidInputError(`${name} must be a whole number from 1 to ${MAX_PAGE_LIMIT}, not ${text}.`, {
      hint: `Page with \`countersign ${command} --after CURSOR\` instead of a larger page.`,
    });
  return value;
}

/**
 * How to get the next page: a last line for people; `{"next": …}` on stderr with --json.
 * `command` is what to run again (with the page's filters), `--after` is added to it.
 */
export function printNext(out: Output, command: string, next: string): void {
  if (out.json) process.stderr.write(`${JSON.stringify({ next })}\n`);
  else out.print(`\nMore: countersign ${command} --after ${next}`);
}

/** A word as a POSIX shell reads it back: as it is when it is plain, else single-quoted. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9._:@/=-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command of the next page: `command` with the options of this one that shape the list
 * (its filters, sort and page size), as a shell reads them back. A cursor is bound to the
 * filters it was handed out under, so the next page's command must repeat them.
 */
export function again(command: string, values: CliValues, names: readonly OptionName[]): string {
  const words = names.flatMap((name) => {
    const value = values[name];
    if (typeof value !== 'string' || value === '') return [];
    // A value that starts with a dash goes after `=`: `--text --force` reads as no value.
    return value.startsWith('-') ? [shellWord(`--${name}=${value}`)] : [`--${name}`, shellWord(value)];
  });
  return [command, ...words].join(' ');
}
