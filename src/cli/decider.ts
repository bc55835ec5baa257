import type { CliValues } from './command-table.ts';

/** Who decides on the CLI: --as, then $COUNTERSIGN_APPROVER, then $USER. Self-asserted. */
export function decider(values: CliValues): string {
  return values.as ?? process.env.COUNTERSIGN_APPROVER ?? process.env.USER ?? 'cli';
}
