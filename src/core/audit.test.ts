import { describe, expect, it } from 'vitest';
import { AUDIT_GENESIS, type AuditEntry, auditHash, auditLinkParts, verifyAuditChain } from './audit.ts';
import { sha256Hex } from './canonical-json.ts';

function chain(n: number): AuditEntry[] {
  const entries: AuditEntry[] = [];
  let prevHash = AUDIT_GENESIS;
  for (let seq = 1; seq <= n; seq++) {
    const base = {
      seq,
      at: `2026-01-01T00:00:0${seq}Z`,
      kind: 'request.raised' as const,
      session: 's',
      requestId: `r${seq}`,
      actor: 'a',
      data: { n: seq },
    };
    const hash = auditHash(prevHash, base);
    entries.push({ ...base, prevHash, hash });
    prevHash = hash;
  }
  return entries;
}

describe('the audit chain', () => {
  it('reports its head, so a chain cut short can be caught against a recorded one', () => {
    const full = chain(4);
    const verdict = verifyAuditChain(full);
    expect(verdict).toEqual({ ok: true, entries: 4, erased: 0, head: { seq: 4, hash: full[3]!.hash } });
    const truncated = verifyAuditChain(full.slice(0, 2));
    expect(truncated).toMatchObject({ ok: true, head: { seq: 2 } });
    expect(truncated.ok && truncated.head?.hash).not.toBe(full[3]!.hash);
    expect(verifyAuditChain([])).toEqual({ ok: true, entries: 0, erased: 0, head: null });
  });

  it('finds an edited, a deleted and a reordered entry', () => {
    const edited = chain(3);
    edited[1] = { ...edited[1]!, actor: 'mallory' };
    expect(verifyAuditChain(edited)).toMatchObject({ ok: false, brokenAt: 2 });
    const deleted = chain(3).filter((entry) => entry.seq !== 2);
    expect(verifyAuditChain(deleted)).toMatchObject({ ok: false, brokenAt: 3 });
    const swapped = chain(3);
    [swapped[0], swapped[1]] = [swapped[1]!, swapped[0]!];
    expect(verifyAuditChain(swapped)).toMatchObject({ ok: false, brokenAt: 2 });
  });
});

describe('auditLinkParts', () => {
  // A store that numbers entries where it writes them (PostgreSQL) hashes before + seq + after.
  it('leaves the seq open so that hashing it in gives auditHash, whatever the strings hold', () => {
    const odd = ['"seq":0', 'a\\"seq":0,"x', '\n\u2028\u0000', 'café 🍵', '"', '\\', ''];
    for (const text of odd) {
      for (const seq of [1, 9, 10, 12345678901]) {
        const entry = {
          at: '2026-12-02T07:00:00.000Z',
          kind: 'request.decided' as const,
          session: text,
          requestId: seq % 2 === 0 ? null : text,
          actor: text,
          data: { note: text },
        };
        const { dataHash, before, after } = auditLinkParts(entry);
        const prev = sha256Hex(text);
        expect(sha256Hex(`${prev}\n${before}${seq}${after}`)).toBe(
          auditHash(prev, { ...entry, seq, dataHash }),
        );
      }
    }
  });
});
