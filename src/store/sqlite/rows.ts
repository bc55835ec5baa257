// The row readers both SQL backends share live in ../row-readers.ts.
import { hex, int, type Row } from '../row-readers.ts';

export * from '../row-readers.ts';

/** The chain's last link, read at the start of every audit append. */
export function toAuditTail(row: Row): { seq: number; hash: string } {
  const where = `audit(seq=${String(row.seq)})`;
  return { seq: int(row, 'seq', where), hash: hex(row, 'hash', where) };
}
