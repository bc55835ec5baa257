import { describe, expect, it } from 'vitest';
import { type ApprovalRequest, type Decision, EXPIRED_REASON, MOVED_ON_REASON } from '../core/approval.ts';
import type { BatchCall, OpenBatch } from '../core/session.ts';
import { request } from '../store/conformance/fixtures.ts';
import { planSettlement, rejectionResult } from './plan-settlement.ts';

const approvalCall = (id: string): BatchCall => ({
  callId: `call-${id}`,
  tool: 'place_order',
  args: { isbn: '978-0', quantity: 2, note: 'gift wrap' },
  disposition: { kind: 'approval', approvalId: id },
});
const decided = (
  id: string,
  verdict: Decision['verdict'],
  kind: Decision['kind'] = 'person',
): ApprovalRequest =>
  request({
    id,
    session: 's1',
    status: verdict,
    decision: {
      verdict,
      by: 'alice',
      reason: verdict === 'approved' ? null : 'no',
      at: '2026-01-01T00:00:00.000Z',
      kind,
    },
  });
const byId = (...requests: ApprovalRequest[]) => new Map(requests.map((r) => [r.id, r]));
const batch = (...calls: BatchCall[]): OpenBatch => ({ messageSeq: 1, calls });

describe('planSettlement (no store)', () => {
  it('waits while a request is pending, and names a request the store does not have', () => {
    const open = batch(approvalCall('r1'), approvalCall('r2'));
    expect(
      planSettlement(open, byId(decided('r1', 'approved'), request({ id: 'r2', session: 's1' })), {
        surfaceQueued: true,
      }),
    ).toEqual({ kind: 'waiting' });
    expect(planSettlement(open, byId(decided('r1', 'approved')), { surfaceQueued: true })).toEqual({
      kind: 'missing',
      approvalId: 'r2',
    });
  });

  it('surfaces queued calls before anything runs, unless the person moved on', () => {
    const open = batch(approvalCall('r1'), {
      callId: 'c2',
      tool: 'place_order',
      args: {},
      disposition: { kind: 'queued' },
    });
    expect(planSettlement(open, byId(decided('r1', 'approved')), { surfaceQueued: true })).toEqual({
      kind: 'surface-queued',
    });
    const plan = planSettlement(open, byId(decided('r1', 'approved')), { surfaceQueued: false });
    expect(plan).toMatchObject({
      kind: 'settle',
      steps: [
        { kind: 'run-approved', request: { id: 'r1' }, deferFinish: true },
        {
          kind: 'answer',
          result: { callId: 'c2', isError: true, output: `Not done. Reason: ${MOVED_ON_REASON}` },
        },
      ],
    });
  });

  it('answers errors and rejections, runs the rest, and defers only the last running call’s ledger result', () => {
    const open = batch(
      { callId: 'c0', tool: 'lookup', args: {}, disposition: { kind: 'error', output: 'Unknown tool' } },
      { callId: 'c1', tool: 'order_status', args: {}, disposition: { kind: 'run' } },
      approvalCall('r1'),
      approvalCall('r2'),
      approvalCall('r3'),
    );
    const plan = planSettlement(
      open,
      byId(decided('r1', 'approved'), decided('r2', 'rejected'), decided('r3', 'expired', 'expiry')),
      {
        surfaceQueued: true,
      },
    );
    expect(plan).toMatchObject({
      kind: 'settle',
      steps: [
        { kind: 'answer', result: { callId: 'c0', output: 'Unknown tool', isError: true } },
        { kind: 'run-direct', call: { callId: 'c1' } },
        { kind: 'run-approved', request: { id: 'r1' }, deferFinish: true },
        {
          kind: 'answer',
          result: { callId: 'call-r2', output: 'Rejected by the reviewer, not done. Reason: no' },
        },
        { kind: 'answer', result: { callId: 'call-r3', output: 'Expired, not done. Reason: no' } },
      ],
    });
  });

  it('a direct call after the last approved one is the one that defers', () => {
    const open = batch(approvalCall('r1'), {
      callId: 'c2',
      tool: 'order_status',
      args: {},
      disposition: { kind: 'run' },
    });
    const plan = planSettlement(open, byId(decided('r1', 'approved')), { surfaceQueued: true });
    expect(plan).toMatchObject({
      kind: 'settle',
      steps: [{ kind: 'run-approved', deferFinish: false }, { kind: 'run-direct' }],
    });
  });

  it('a closed request without a recorded decision gives the expiry reason', () => {
    expect(rejectionResult(approvalCall('r1'), null).output).toBe(
      `Rejected by the reviewer, not done. Reason: ${EXPIRED_REASON}`,
    );
  });
});
