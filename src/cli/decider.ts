import type { CliValues } from './command-table.ts';

/**
 * Who the CLI acts as: `--as`, else COUNTERSIGN_APPROVER, else the login name. Self-asserted
 * (whoever runs the CLI can open the store anyway), but recorded: what this name raised, it
 * may not decide.
 */
export function decider(values: Pick<CliValues, 'as'>): string {
  return values.as ?? process.env.COUNTERSIGN_APPROVER ?? process.env.USER ?? 'cli';
}
