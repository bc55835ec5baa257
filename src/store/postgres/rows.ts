// The row readers both SQL backends share live in ../row-readers.ts.
import { hex, int, type Row, textOrNull } from '../row-readers.ts';

export * from '../row-readers.ts';

/** The chain's tail as the audit_head row holds it. */
export function toAuditHead(row: Row): { seq: number; hash: string } {
  const where = 'audit_head';
  return { seq: int(row, 'seq', where), hash: hex(row, 'hash', where) };
}

export function toLease(row: Row, session: string): { owner: string | null; untilMs: number } {
  const where = `sessions(id=${session})`;
  return { owner: textOrNull(row, 'lease_owner', where), untilMs: int(row, 'lease_until', where) };
}

/** What a fenced step is checked against. */
export function toFence(row: Row, session: string): { owner: string | null; messageCount: number } {
  const where = `sessions(id=${session})`;
  return { owner: textOrNull(row, 'lease_owner', where), messageCount: int(row, 'message_count', where) };
}
