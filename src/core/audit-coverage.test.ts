import { describe, expect, it } from 'vitest';
import type { ApprovalRequest, DecisionKind } from './approval.ts';
import type { AuditEntry, AuditKind } from './audit.ts';
import { auditGaps, describeGaps, indexAudit } from './audit-coverage.ts';

let seq = 0;
function entry(
  kind: AuditKind,
  requestId: string | null,
  data: AuditEntry['data'] = {},
  session = 's1',
): AuditEntry {
  seq += 1;
  return { seq, at: '', kind, session, requestId, actor: 'x', data, prevHash: '', hash: '' };
}

type Row = Pick<ApprovalRequest, 'id' | 'session' | 'status' | 'decision'>;
function decided(id: string, kind: DecisionKind, session = 's1'): Row {
  return {
    id,
    session,
    status: kind === 'expiry' ? 'expired' : 'approved',
    decision: { verdict: 'approved', by: 'x', reason: null, at: '', kind },
  };
}

describe('audit coverage', () => {
  it('each decision kind needs its own entry', () => {
    const kinds: Array<[DecisionKind, AuditKind]> = [
      ['person', 'request.decided'],
      ['moved-on', 'request.moved-on'],
      ['expiry', 'request.expired'],
      ['standing-rule', 'request.auto-approved'],
      ['auto-rule', 'request.auto-approved'],
    ];
    for (const [kind, audit] of kinds) {
      const rows = [decided('r1', kind)];
      const raised = [entry('request.raised', 'r1')];
      expect(auditGaps(indexAudit([...raised, entry(audit, 'r1')]), rows, [])).toEqual([]);
      const wrong = audit === 'request.decided' ? 'request.expired' : 'request.decided';
      expect(auditGaps(indexAudit([...raised, entry(wrong, 'r1')]), rows, [])).toEqual([
        { missing: audit, count: 1, first: ['r1'] },
      ]);
    }
  });

  it('a port request answered or expired before requests were rows is covered by its workflow.* entries', () => {
    const answered: Row = {
      id: 'p1',
      session: 'wf.r',
      status: 'answered',
      decision: { verdict: 'answered', by: 'mona', reason: null, at: '', kind: 'person', response: true },
    };
    const expired = { ...decided('p2', 'expiry', 'wf.r') };
    const legacy = [
      entry('workflow.requested', 'p1', {}, 'wf.r'),
      entry('workflow.answered', 'p1', {}, 'wf.r'),
      entry('workflow.requested', 'p2', {}, 'wf.r'),
      entry('workflow.expired', 'p2', {}, 'wf.r'),
    ];
    expect(auditGaps(indexAudit(legacy), [answered, expired], [])).toEqual([]);
    // A new one has the request.* entries; without any, it is a gap like a tool call's.
    expect(auditGaps(indexAudit([]), [answered], [])).toEqual([
      { missing: 'request.raised', count: 1, first: ['p1'] },
      { missing: 'request.decided', count: 1, first: ['p1'] },
    ]);
  });

  it('a pending request needs only request.raised; ledger rows need started, and finished once finished', () => {
    const pending: Row = { id: 'r1', session: 's1', status: 'pending', decision: null };
    expect(auditGaps(indexAudit([]), [pending], [])).toEqual([
      { missing: 'request.raised', count: 1, first: ['r1'] },
    ]);
    const rows = [
      { requestId: 'a', session: 's1', status: 'started' as const },
      { requestId: 'b', session: 's1', status: 'unknown' as const },
      { requestId: 'c', session: 's1', status: 'succeeded' as const },
    ];
    const started = ['a', 'b', 'c'].map((id) => entry('execution.started', id));
    expect(auditGaps(indexAudit(started), [], rows)).toEqual([
      { missing: 'execution.finished', count: 1, first: ['c'] },
    ]);
    // A person's reconcile, or an integrity refusal, stands in for the run's own entries.
    expect(auditGaps(indexAudit([...started, entry('execution.reconciled', 'c')]), [], rows)).toEqual([]);
    expect(
      auditGaps(
        indexAudit([entry('tamper.refused', 'x')]),
        [],
        [{ requestId: 'x', session: 's1', status: 'failed' }],
      ),
    ).toEqual([]);
  });

  it('an import vouches for what it lists; rows added later need their own entries', () => {
    const imported = entry('session.imported', null, {
      requests: ['r1', 'r2'],
      keptDecisions: ['r1'],
      keptLedger: ['r1'],
      reopened: ['r2'],
    });
    const rows = [decided('r1', 'person'), decided('r2', 'person'), decided('r3', 'person')];
    const ledger = [
      { requestId: 'r1', session: 's1', status: 'succeeded' as const },
      { requestId: 'r2', session: 's1', status: 'succeeded' as const },
    ];
    const gaps = auditGaps(indexAudit([imported, entry('request.decided', 'r2')]), rows, ledger);
    expect(gaps).toEqual([
      { missing: 'request.raised', count: 1, first: ['r3'] },
      { missing: 'request.decided', count: 1, first: ['r3'] },
      { missing: 'execution.started', count: 1, first: ['r2'] },
      { missing: 'execution.finished', count: 1, first: ['r2'] },
    ]);
    expect(describeGaps(gaps)).toBe(
      '1 request without request.raised (r3); 1 request without request.decided (r3); ' +
        '1 ledger row without execution.started (r2); 1 ledger row without execution.finished (r2)',
    );
  });

  it('a session imported before imports listed their requests counts as audited', () => {
    const legacy = entry('session.imported', null, { messages: 3, approvals: 2 }, 'old');
    const rows = [decided('r1', 'person', 'old'), decided('r2', 'person', 'other')];
    expect(
      auditGaps(indexAudit([legacy]), rows, [{ requestId: 'r1', session: 'old', status: 'succeeded' }]),
    ).toEqual([
      { missing: 'request.raised', count: 1, first: ['r2'] },
      { missing: 'request.decided', count: 1, first: ['r2'] },
    ]);
  });

  it('names the first three and counts the rest', () => {
    const rows = ['a', 'b', 'c', 'd', 'e'].map(
      (id): Row => ({ id, session: 's1', status: 'pending', decision: null }),
    );
    const gaps = auditGaps(indexAudit([]), rows, []);
    expect(gaps).toEqual([{ missing: 'request.raised', count: 5, first: ['a', 'b', 'c'] }]);
    expect(describeGaps(gaps)).toBe('5 requests without request.raised (a, b, c, …)');
  });
});
