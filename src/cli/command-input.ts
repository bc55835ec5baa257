import type { CliValues } from './command-table.ts';
import type { CliContext } from './context.ts';
import type { Output } from './output.ts';

/** What every command receives: its positional arguments (after the command's own words), its options, and where to write. */
export interface CommandInput {
  args: string[];
  values: CliValues;
  context: CliContext;
  out: Output;
}

export type Command = (input: CommandInput) => Promise<number | undefined>;
