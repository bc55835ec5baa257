import type { AuditGap } from './audit-coverage.ts';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import type { JsonValue } from './json.ts';

export type AuditKind =
  | 'request.raised'
  | 'request.decided'
  | 'request.auto-approved'
  | 'request.expired'
  | 'request.moved-on'
  | 'execution.started'
  | 'execution.finished'
  | 'execution.retried'
  | 'execution.reconciled'
  | 'tamper.ignored'
  | 'tamper.refused'
  | 'session.imported'
  | 'rule.revoked'
  | 'call.logged'
  | 'workflow.requested'
  | 'workflow.answered'
  | 'workflow.expired';

export interface AuditEvent {
  kind: AuditKind;
  session: string | null;
  requestId: string | null;
  actor: string;
  data: { [key: string]: JsonValue };
}

export interface AuditEntry extends AuditEvent {
  seq: number;
  at: string;
  prevHash: string;
  hash: string;
}

export const AUDIT_GENESIS = '0'.repeat(64);

/** The chain link: any edit, deletion or reordering of an entry breaks every later hash. */
export function auditHash(prevHash: string, entry: Omit<AuditEntry, 'hash' | 'prevHash'>): string {
  return sha256Hex(
    `${prevHash}\n${canonicalJson({
      seq: entry.seq,
      at: entry.at,
      kind: entry.kind,
      session: entry.session,
      requestId: entry.requestId,
      actor: entry.actor,
      data: entry.data,
    })}`,
  );
}

export type AuditVerification =
  /**
   * `head` is the last entry's seq and hash. Record it somewhere the database's owners cannot
   * write: a chain that was cut short still verifies, but no longer reaches a recorded head.
   */
  | { ok: true; entries: number; head: { seq: number; hash: string } | null }
  | { ok: false; entries: number; brokenAt: number; problem: string }
  /**
   * The chain holds, but stored requests or ledger rows lack the entries their state implies:
   * entries were removed from the end, or the table was emptied.
   */
  | { ok: false; entries: number; brokenAt: null; problem: string; missing: AuditGap[] };

/** Walks the chain in seq order; reports the first entry whose link does not hold. */
export function verifyAuditChain(entries: readonly AuditEntry[]): AuditVerification {
  let prev = AUDIT_GENESIS;
  let expectedSeq = 1;
  for (const entry of entries) {
    if (entry.seq !== expectedSeq) {
      return {
        ok: false,
        entries: entries.length,
        brokenAt: entry.seq,
        problem: `expected entry ${expectedSeq} but found ${entry.seq}: an entry was deleted or reordered`,
      };
    }
    if (entry.prevHash !== prev) {
      return {
        ok: false,
        entries: entries.length,
        brokenAt: entry.seq,
        problem: `entry ${entry.seq} does not link to the entry before it`,
      };
    }
    if (auditHash(prev, entry) !== entry.hash) {
      return {
        ok: false,
        entries: entries.length,
        brokenAt: entry.seq,
        problem: `entry ${entry.seq} was edited after it was written`,
      };
    }
    prev = entry.hash;
    expectedSeq += 1;
  }
  const last = entries.at(-1);
  return { ok: true, entries: entries.length, head: last ? { seq: last.seq, hash: last.hash } : null };
}
